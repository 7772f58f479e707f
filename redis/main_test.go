package redis_test

import (
	"context"
	"os"
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	// go-redis logs every failed dial; the fault tests make many.
	goredis.SetLogger(quiet{})
	os.Exit(m.Run())
}
