package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/batonhq/baton/cmd/baton/internal/serve"
	"github.com/batonhq/baton/etcd/embedded"
)

// serveSynopsis is serve's usage line.
const serveSynopsis = "serve [--data-dir DIR] [--listen 127.0.0.1:2379] [--metrics-addr HOST:PORT] [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]] [--auth] [--ui [--ui-listen h:p]] [--compaction-interval D] [--quota-backend-bytes SIZE] [--snapshot-count N] [--name N (--initial-cluster N=h:p,… | --cluster FILE | --join URL) [--listen-peer h:p] [--peer-tls-cert F --peer-tls-key F [--peer-tls-ca F]]] | serve members [--store URL]"

// membersVerb is the index of the verb "members" among serve's
// arguments (before any "--"), or -1.
func membersVerb(args []string) int {
	for i, a := range args {
		switch a {
		case "--":
			return -1
		case "members":
			return i
		}
	}
	return -1
}

// serveFlags are serve's flags.
type serveFlags struct {
	fs                *flagSet
	dir, listen       *string
	sec               serve.Security
	ui                *bool
	uiListen          *string
	ops               serve.Ops
	cluster           serve.Cluster
	metricsAddr       string
	dirSet, listenSet bool // given on the command line
}

func (m *Main) newServeFlags() *serveFlags {
	f := &serveFlags{fs: m.newFlags("serve", serveSynopsis, nil, false)}
	fs := f.fs
	f.dir = fs.String("data-dir", "default.etcd", "where the server keeps its data (default for a member: NAME.etcd)")
	f.listen = fs.String("listen", "127.0.0.1:2379", "client `host:port` (port 0 picks a free one)")
	fs.StringVar(&f.sec.Cert, "tls-cert", "", "server certificate PEM `FILE`: serve clients over TLS only (etcds://); SIGHUP reloads the TLS files")
	fs.StringVar(&f.sec.Key, "tls-key", "", "PEM `FILE` of the server certificate's key")
	fs.StringVar(&f.sec.ClientCA, "tls-client-ca", "", "require client certificates signed by a CA in this PEM `FILE`")
	fs.BoolVar(&f.sec.Auth, "auth", false, "turn on etcd authentication: user root, password from $BATON_AUTH_PASSWORD")
	f.ui = fs.Bool("ui", false, "also serve baton ui's page (read-only) for this etcd, on --ui-listen")
	f.uiListen = fs.String("ui-listen", "127.0.0.1:8080", "the page's `host:port` with --ui (port 0 picks a free one)")
	f.ops.AddFlags(fs.FlagSet)
	f.cluster.AddFlags(fs.FlagSet)
	addMetricsFlag(fs, &f.metricsAddr)
	return f
}

// serve is `baton serve`: a single-node etcd in this process, the store
// baton uses by default; with --tls-cert and --tls-key it serves TLS only
// (etcds://), with --tls-client-ca it requires client certificates (SIGHUP
// reloads the certificates and CAs), and
// with --auth it turns on etcd authentication as user root with the
// password in $BATON_AUTH_PASSWORD (never a flag, never printed).
func (m *Main) serve(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "members" {
		return m.serveMembers(ctx, args[1:])
	}
	f := m.newServeFlags()
	pos, argv, err := parseArgs(f.fs, args)
	if i := membersVerb(args); i >= 0 && (err != nil && !errors.Is(err, flag.ErrHelp) || slices.Equal(pos, []string{"members"})) {
		// The verb after its flags (baton serve --store URL members), as
		// queue's and barrier's may be: flags serve lacks failed its
		// parse, or "members" was left over as an argument.
		return m.serveMembers(ctx, slices.Delete(slices.Clone(args), i, i+1))
	}
	if err != nil {
		return err
	}
	if len(pos) > 0 || argv != nil {
		return usageErr("serve: unexpected arguments")
	}
	cfg, err := m.serveConfig(f)
	if err != nil {
		return err
	}
	// etcd registers its metrics with Prometheus's default registry.
	ms, err := startMetrics(f.metricsAddr, prometheus.DefaultGatherer)
	if err != nil {
		return err
	}
	defer ms.close()
	sigs := catchSignals()
	defer sigs.stop()
	srv, err := m.startEtcd(ctx, sigs, f, &cfg)
	if err != nil {
		return err
	}
	defer srv.Close()
	m.announceServe(ctx, f, cfg, srv, ms)
	if *f.ui {
		stopUI, err := m.startServeUI(srv.Addr(), *f.uiListen, f.sec.RootPassword)
		if err != nil {
			return err
		}
		defer stopUI()
	}
	m.serveUntilStopped(ctx, sigs, cfg, srv)
	fmt.Fprintln(m.Stdout, "baton: etcd stopped")
	return nil
}

// serveConfig checks serve's flags and returns the server's configuration
// (without its data directory and client address, which f holds, settled).
// Bad addresses are usage errors found before etcd makes its data
// directory.
func (m *Main) serveConfig(f *serveFlags) (embedded.Config, error) {
	f.fs.Visit(func(fl *flag.Flag) {
		f.dirSet = f.dirSet || fl.Name == "data-dir"
		f.listenSet = f.listenSet || fl.Name == "listen"
	})
	if f.sec.Auth {
		f.sec.RootPassword = m.Getenv("BATON_AUTH_PASSWORD")
	}
	cfg, err := f.sec.Config()
	if err != nil {
		return cfg, err
	}
	if err := f.ops.Apply(&cfg); err != nil {
		return cfg, err
	}
	if *f.ui && cfg.TLS() {
		return cfg, usageErr("serve: --ui serves a plain etcd only (no --tls-cert)")
	}
	if err := f.cluster.Apply(&cfg, f.listen, f.listenSet); err != nil {
		return cfg, err
	}
	if f.cluster.On() && !f.dirSet {
		*f.dir = f.cluster.Name() + ".etcd"
	}
	if err := checkListen("serve: --listen", *f.listen); err != nil {
		return cfg, err
	}
	if *f.ui {
		if err := checkListen("serve: --ui-listen", *f.uiListen); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// startEtcd starts the server on f's data directory and address, set in
// cfg, until a signal. A data directory this run made and left empty (the
// address was taken, say) is not left behind; one with anything in it is
// kept.
func (m *Main) startEtcd(ctx context.Context, sigs *signals, f *serveFlags, cfg *embedded.Config) (*embedded.Server, error) {
	abs, err := filepath.Abs(*f.dir)
	if err != nil {
		return nil, err
	}
	cfg.DataDir, cfg.ClientAddr = abs, *f.listen
	if f.cluster.On() {
		fmt.Fprintf(m.Stdout, "baton: etcd member %s starting (peers on %s, data in %s); it serves once a quorum of its cluster is up\n", f.cluster.Name(), f.cluster.ListenPeer(), abs)
	}
	_, statErr := os.Stat(abs)
	fresh := os.IsNotExist(statErr)
	srv, err := waitFor(ctx, sigs, 0, func(ctx context.Context) (*embedded.Server, error) {
		return embedded.Start(ctx, *cfg)
	})
	if err != nil {
		if fresh {
			_ = os.Remove(abs)
		}
		return nil, wrapExit(err, "serve")
	}
	return srv, nil
}

// announceServe prints where the server serves and how to reach it.
func (m *Main) announceServe(ctx context.Context, f *serveFlags, cfg embedded.Config, srv *embedded.Server, ms *metricsServer) {
	if f.cluster.On() {
		fmt.Fprint(m.Stdout, f.cluster.ClusterLine(ctx, cfg, srv, cfg.DataDir))
	} else {
		fmt.Fprintf(m.Stdout, "baton: etcd serving on %s (data in %s%s); use --store %s; Ctrl-C stops\n",
			srv.Addr(), cfg.DataDir, serve.Modes(cfg, srv), serve.StoreURL(cfg, srv))
	}
	if ms != nil {
		fmt.Fprintf(m.Stdout, "baton: metrics (etcd's and the process's) on http://%s/metrics\n", ms.addr)
	}
}

// serveUntilStopped serves until ctx ends or a signal other than SIGHUP
// arrives; SIGHUP reloads the TLS files.
func (m *Main) serveUntilStopped(ctx context.Context, sigs *signals, cfg embedded.Config, srv *embedded.Server) {
	cas := serve.ReadCAs(cfg)
	for {
		select {
		case sig := <-sigs.c:
			if sig != syscall.SIGHUP {
				return
			}
			serve.ReloadTLS(ctx, m.Stdout, m.Stderr, cfg, srv, &cas)
		case <-ctx.Done():
			return
		}
	}
}
