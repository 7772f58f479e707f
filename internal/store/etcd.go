package store

import (
	"context"

	"github.com/batonhq/baton/etcd"
)

// openEtcd dials the endpoints (https:// for etcds://, with the
// credentials of the URL if any) with a silent client (the command line
// prints one line per failure, never the client's retry logs) and opens a
// session on it, which closes the client when it ends.
func openEtcd(ctx context.Context, u URL, o Options) (*Store, error) {
	opts := []etcd.Option{etcd.WithTTL(o.TTL), etcd.WithTelemetry(o.Telemetry)}
	eps := make([]string, len(u.Hosts))
	for i, h := range u.Hosts {
		eps[i] = "http://" + h
	}
	if u.TLS {
		cfg, err := o.TLS.Config("")
		if err != nil {
			return nil, err
		}
		opts = append(opts, etcd.WithTLS(cfg))
		for i, h := range u.Hosts {
			eps[i] = "https://" + h
		}
	}
	if u.User != "" {
		opts = append(opts, etcd.WithAuth(u.User, u.Password))
	}
	s, err := etcd.Open(ctx, eps, opts...)
	if err != nil {
		return nil, err
	}
	return newSessionStore(u, s), nil
}
