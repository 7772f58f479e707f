package reliability

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton"
)

func openOther(ctx context.Context, kind, addr string, ttl time.Duration) (*baton.Session, error) {
	return nil, fmt.Errorf("reliability: unknown store kind %q", kind)
}

func otherTargets(t *testing.T) []target { return nil }
