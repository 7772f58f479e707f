package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/batonhq/baton/etcd/embedded"
)

// serve is `baton serve [--data-dir DIR] [--listen 127.0.0.1:2379]`: a
// single-node etcd in this process, the store baton uses by default.
func (m *Main) serve(ctx context.Context, args []string) error {
	fs := m.newFlags("serve", "serve [--data-dir DIR] [--listen 127.0.0.1:2379]", nil, false)
	dir := fs.String("data-dir", "default.etcd", "where the server keeps its data")
	listen := fs.String("listen", "127.0.0.1:2379", "client `host:port` (port 0 picks a free one)")
	pos, argv, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 || argv != nil {
		return usageErr("serve: unexpected arguments")
	}
	sigs := catchSignals()
	defer sigs.stop()
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	srv, err := waitFor(ctx, sigs, 0, func(ctx context.Context) (*embedded.Server, error) {
		return embedded.Start(ctx, embedded.Config{DataDir: abs, ClientAddr: *listen})
	})
	if err != nil {
		return wrapExit(err, "serve")
	}
	defer srv.Close()
	fmt.Fprintf(m.Stdout, "baton: etcd serving on %s (data in %s); use --store etcd://%s; Ctrl-C stops\n", srv.Addr(), abs, srv.Addr())
	select {
	case <-sigs.c:
	case <-ctx.Done():
	}
	fmt.Fprintln(m.Stdout, "baton: etcd stopped")
	return nil
}
