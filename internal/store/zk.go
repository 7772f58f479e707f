package store

import (
	"context"

	"github.com/batonhq/baton/zk"
)

// openZK connects to the ensemble and waits for a session. Credentials in
// the URL are a ZooKeeper digest identity (addauth digest user:pass), and
// every node the session creates then gets zk.CreatorACL: only that
// identity (and the server's super user) may change or delete it. zks://
// dials the servers' secure client port with the TLS files of o.
func openZK(ctx context.Context, u URL, o Options) (*Store, error) {
	opts := []zk.Option{zk.WithTTL(o.TTL), zk.WithTelemetry(o.Telemetry)}
	if u.Chroot != "" {
		opts = append(opts, zk.WithChroot(u.Chroot))
	}
	if u.User != "" {
		opts = append(opts,
			zk.WithAuth("digest", []byte(u.User+":"+u.Password)),
			zk.WithACL(zk.CreatorACL...))
	}
	if u.TLS {
		cfg, err := o.TLS.Config("") // each server is checked as the host it is dialled by
		if err != nil {
			return nil, err
		}
		opts = append(opts, zk.WithTLS(cfg))
	}
	s, err := zk.Open(ctx, u.Hosts, opts...)
	if err != nil {
		return nil, err
	}
	return newSessionStore(u, s), nil
}
