package main

import (
	"context"
	"crypto/tls"

	"github.com/batonhq/baton/cmd/baton/internal/serve"
)

// serveMembers is `baton serve members`: the members of the cluster at
// --store, and its leader.
func (m *Main) serveMembers(ctx context.Context, args []string) error {
	var sf storeFlags
	fs := m.newFlags("serve members", "serve members [--store etcd://h:p,…] [--tls-ca F [--tls-cert F --tls-key F]]", &sf, false)
	pos, argv, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 || argv != nil {
		return usageErr("serve members: unexpected arguments")
	}
	u, err := sf.parse()
	if err != nil {
		return err
	}
	if !u.Members() {
		return usageErr("serve members: --store must be etcd:// or etcds://")
	}
	var tc *tls.Config
	if u.TLS {
		if tc, err = sf.tls.Config(""); err != nil {
			return usageErr("serve members: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, sf.dial)
	defer cancel()
	return serve.PrintMembers(ctx, m.Stdout, u, tc)
}
