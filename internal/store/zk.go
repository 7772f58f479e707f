package store

import (
	"context"

	"github.com/batonhq/baton/zk"
)

// openZK connects to the ensemble and waits for a session.
func openZK(ctx context.Context, u URL, o Options) (*Store, error) {
	opts := []zk.Option{zk.WithTTL(o.TTL)}
	if u.Chroot != "" {
		opts = append(opts, zk.WithChroot(u.Chroot))
	}
	s, err := zk.Open(ctx, u.Hosts, opts...)
	if err != nil {
		return nil, err
	}
	return &Store{URL: u, Session: s}, nil
}
