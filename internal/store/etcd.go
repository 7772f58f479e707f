package store

import (
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton/etcd"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// openEtcd dials the endpoints with a silent client (the command line
// prints one line per failure, never the client's retry logs) and opens a
// session on it. The client is closed with the store.
func openEtcd(ctx context.Context, u URL, o Options) (*Store, error) {
	deadline, ok := ctx.Deadline()
	dial := o.DialTimeout
	if ok {
		dial = time.Until(deadline)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            u.Hosts,
		DialTimeout:          dial,
		DialKeepAliveTime:    time.Second,
		DialKeepAliveTimeout: time.Second,
		Logger:               zap.NewNop(),
		Context:              context.WithoutCancel(ctx),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	s, err := etcd.Open(ctx, u.Hosts, etcd.WithClient(cli), etcd.WithTTL(o.TTL))
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	return &Store{URL: u, Session: s, closer: cli.Close}, nil
}
