package redis_test

import (
	"context"
	"os"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/batonhq/baton/internal/redistest"
)

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	// go-redis logs every failed dial; the fault tests make many.
	goredis.SetLogger(quiet{})
	code := m.Run()
	redistest.StopShared()
	if code == 0 {
		// No goroutine of a Client outlives its Close.
		if err := redistest.FindLeaks(); err != nil {
			println(err.Error())
			code = 1
		}
	}
	os.Exit(code)
}
