package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"

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
	fs := m.newFlags("serve", serveSynopsis, nil, false)
	dir := fs.String("data-dir", "default.etcd", "where the server keeps its data (default for a member: NAME.etcd)")
	listen := fs.String("listen", "127.0.0.1:2379", "client `host:port` (port 0 picks a free one)")
	cert := fs.String("tls-cert", "", "server certificate PEM `FILE`: serve clients over TLS only (etcds://); SIGHUP reloads the TLS files")
	key := fs.String("tls-key", "", "PEM `FILE` of the server certificate's key")
	clientCA := fs.String("tls-client-ca", "", "require client certificates signed by a CA in this PEM `FILE`")
	auth := fs.Bool("auth", false, "turn on etcd authentication: user root, password from $BATON_AUTH_PASSWORD")
	ui := fs.Bool("ui", false, "also serve baton ui's page (read-only) for this etcd, on --ui-listen")
	uiListen := fs.String("ui-listen", "127.0.0.1:8080", "the page's `host:port` with --ui (port 0 picks a free one)")
	ops := addServeOps(fs)
	cluster := addServeCluster(fs)
	var metricsAddr string
	addMetricsFlag(fs, &metricsAddr)
	pos, argv, err := parseArgs(fs, args)
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
	cfg, err := m.serveConfig(*cert, *key, *clientCA, *auth)
	if err != nil {
		return err
	}
	if err := ops.apply(&cfg); err != nil {
		return err
	}
	if *ui && cfg.TLS() {
		return usageErr("serve: --ui serves a plain etcd only (no --tls-cert)")
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := cluster.apply(&cfg, listen, set["listen"]); err != nil {
		return err
	}
	if cluster.on() && !set["data-dir"] {
		*dir = cluster.name + ".etcd"
	}
	// A bad address is a usage error, found before etcd makes its data
	// directory.
	if err := checkListen("serve: --listen", *listen); err != nil {
		return err
	}
	if *ui {
		if err := checkListen("serve: --ui-listen", *uiListen); err != nil {
			return err
		}
	}
	// etcd registers its metrics with Prometheus's default registry.
	ms, err := startMetrics(metricsAddr, prometheus.DefaultGatherer)
	if err != nil {
		return err
	}
	defer ms.close()
	sigs := catchSignals()
	defer sigs.stop()
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	cfg.DataDir, cfg.ClientAddr = abs, *listen
	if cluster.on() {
		fmt.Fprintf(m.Stdout, "baton: etcd member %s starting (peers on %s, data in %s); it serves once a quorum of its cluster is up\n", cluster.name, cluster.listenPeer, abs)
	}
	_, statErr := os.Stat(abs)
	fresh := os.IsNotExist(statErr)
	srv, err := waitFor(ctx, sigs, 0, func(ctx context.Context) (*embedded.Server, error) {
		return embedded.Start(ctx, cfg)
	})
	if err != nil {
		if fresh {
			// A data directory this run made and left empty (the
			// address was taken, say) is not left behind; one with
			// anything in it is kept.
			_ = os.Remove(abs)
		}
		return wrapExit(err, "serve")
	}
	defer srv.Close()
	if cluster.on() {
		fmt.Fprint(m.Stdout, cluster.clusterLine(ctx, cfg, srv, abs))
	} else {
		fmt.Fprintf(m.Stdout, "baton: etcd serving on %s (data in %s%s); use --store %s; Ctrl-C stops\n",
			srv.Addr(), abs, serveModes(cfg, srv), serveStore(cfg, srv))
	}
	if ms != nil {
		fmt.Fprintf(m.Stdout, "baton: metrics (etcd's and the process's) on http://%s/metrics\n", ms.addr)
	}
	if *ui {
		stopUI, err := m.startServeUI(srv.Addr(), *uiListen, ifElse(*auth, m.Getenv("BATON_AUTH_PASSWORD"), ""))
		if err != nil {
			return err
		}
		defer stopUI()
	}
	cas := readCAs(cfg)
	for stop := false; !stop; {
		select {
		case sig := <-sigs.c:
			if sig == syscall.SIGHUP {
				m.reloadTLS(ctx, cfg, srv, &cas)
				continue
			}
			stop = true
		case <-ctx.Done():
			stop = true
		}
	}
	fmt.Fprintln(m.Stdout, "baton: etcd stopped")
	return nil
}

// serveConfig checks serve's security flags and returns the server's
// configuration for them (without its addresses).
func (m *Main) serveConfig(cert, key, clientCA string, auth bool) (embedded.Config, error) {
	var cfg embedded.Config
	if (cert == "") != (key == "") {
		return cfg, usageErr("serve: --tls-cert and --tls-key go together")
	}
	if clientCA != "" && cert == "" {
		return cfg, usageErr("serve: --tls-client-ca needs --tls-cert and --tls-key")
	}
	for _, f := range []struct{ flag, path string }{{"--tls-cert", cert}, {"--tls-key", key}, {"--tls-client-ca", clientCA}} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			return cfg, usageErr("serve: %s: %v", f.flag, err)
		}
	}
	cfg.CertFile, cfg.KeyFile, cfg.ClientCAFile = cert, key, clientCA
	if auth {
		cfg.RootPassword = m.Getenv("BATON_AUTH_PASSWORD")
		if cfg.RootPassword == "" {
			return cfg, usageErr("serve: --auth needs root's password in $BATON_AUTH_PASSWORD")
		}
	}
	return cfg, nil
}

// serveModes describes TLS and authentication for the startup line.
func serveModes(cfg embedded.Config, srv *embedded.Server) string {
	var modes []string
	if cfg.TLS() {
		if cfg.ClientCAFile != "" {
			modes = append(modes, "TLS with client certificates")
		} else {
			modes = append(modes, "TLS")
		}
	}
	if srv.AuthEnabled() {
		modes = append(modes, "auth on, user root")
	}
	if len(modes) == 0 {
		return ""
	}
	return "; " + strings.Join(modes, ", ")
}

// serveStore is the --store URL (and TLS flags) clients use, without the
// password.
func serveStore(cfg embedded.Config, srv *embedded.Server) string {
	scheme, user := "etcd", ""
	if cfg.TLS() {
		scheme = "etcds"
	}
	if srv.AuthEnabled() {
		user = "root:$BATON_AUTH_PASSWORD@"
	}
	s := scheme + "://" + user + srv.Addr()
	if cfg.TLS() {
		s += " --tls-ca CA-FILE"
	}
	if cfg.ClientCAFile != "" {
		s += " --tls-cert FILE --tls-key FILE"
	}
	return s
}
