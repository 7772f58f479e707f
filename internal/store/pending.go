package store

import (
	"context"
	"fmt"
)

// Backends not yet wired into the command line.

func openZK(ctx context.Context, u URL, o Options) (*Store, error) {
	return nil, fmt.Errorf("%w yet: zk", ErrUnavailable)
}

func openRedis(ctx context.Context, u URL, o Options) (*Store, error) {
	return nil, fmt.Errorf("%w yet: %s", ErrUnavailable, u.Scheme)
}
