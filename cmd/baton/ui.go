package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/batonhq/baton/cmd/baton/internal/ui"
	"github.com/batonhq/baton/internal/store"
)

const uiSynopsis = "ui [--store URL] [--prefix P] [--listen 127.0.0.1:8080] [--listen-cert FILE --listen-key FILE] [--admin [--audit-log FILE]]\n\n" +
	"Serves a live web page of every recipe instance under the prefix (ZooKeeper or etcd; on Redis\n" +
	"and Redlock, baton's locks whose keys start with it, re-read every 500 ms unless the servers\n" +
	"publish keyspace notifications): holders\n" +
	"and waiters in order, identity (host, pid, command; \"foreign\" for a peer's node), fencing\n" +
	"token, age, TTL left, election value and the warnings `baton status` gives. Changes reach the\n" +
	"page within a second, pushed by Server-Sent Events from the store's watches. 25 instances a\n" +
	"page, 50 nodes each (the rest are counted).\n\n" +
	"Read-only unless --admin: then the page offers force-release of a holder, removal of a\n" +
	"waiter and draining of a queue item (each deletes the node; a holder's lease ends with\n" +
	"ErrRevoked), each confirmed on the page, authenticated with the token in $BATON_UI_TOKEN\n" +
	"(required), and written to the audit log as one JSON line (who, what, when, node, token); a\n" +
	"refusal by the store's ACLs or auth is shown as it is. Each name has a contention chart:\n" +
	"acquisitions/s and wait p50/p99 over 5 minutes, from the hand-offs the page sees.\n\n" +
	"--admin on a --listen address that is not loopback\n" +
	"is refused unless the page is served over HTTPS (--listen-cert and --listen-key): the token\n" +
	"must not cross a network in clear (behind a TLS proxy, listen on 127.0.0.1).\n\n" +
	"Exit status: 0 when interrupted; 1 if it cannot listen (the address is taken, say);\n2 for bad usage (a --listen that is not host:port, or a --listen-cert or --listen-key that\ndoes not load, among it)."

// ui is `baton ui`.
func (m *Main) ui(ctx context.Context, args []string) error {
	var sf storeFlags
	fs := m.newFlags("ui", uiSynopsis, &sf, false)
	prefix := fs.String("prefix", "", "show the instances under this `P` (default: / on ZooKeeper, every key on etcd)")
	listen := fs.String("listen", "127.0.0.1:8080", "serve the page on `host:port` (port 0 picks a free one)")
	admin := fs.Bool("admin", false, "offer force-release, waiter removal and queue item draining, authenticated by $BATON_UI_TOKEN")
	audit := fs.String("audit-log", "", "append admin actions to this `FILE` (default: stderr)")
	cert := fs.String("listen-cert", "", "serve the page over HTTPS with this certificate PEM `FILE` (with --listen-key)")
	key := fs.String("listen-key", "", "the --listen-cert certificate's key PEM `FILE`")
	pos, argv, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 || argv != nil {
		return usageErr("ui: unexpected arguments")
	}
	if (*cert == "") != (*key == "") {
		return usageErr("ui: --listen-cert and --listen-key go together")
	}
	if err := checkListen("ui: --listen", *listen); err != nil {
		return err
	}
	if *admin && *cert == "" && !loopback(*listen) {
		return usageErr("ui: --admin on --listen %s, which is not loopback, needs HTTPS (--listen-cert and --listen-key): "+
			"the admin token must not cross a network in clear; or listen on 127.0.0.1 behind a TLS proxy", *listen)
	}
	var tlsCfg *tls.Config
	if *cert != "" {
		pair, err := tls.LoadX509KeyPair(*cert, *key)
		if err != nil {
			return usageErr("ui: --listen-cert %s, --listen-key %s: %w", *cert, *key, err)
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	}
	u, err := sf.parse()
	if err != nil {
		return err
	}
	if err := u.Admin(); err != nil && *admin {
		return usageErr("ui: --store %s: %v", u.String(), err)
	}
	if *prefix == "" {
		*prefix = u.RootPrefix()
	}
	cfg := m.uiConfig(u, &sf, *prefix)
	if *admin {
		cfg.Admin, cfg.Token, cfg.AuditPath = true, m.Getenv("BATON_UI_TOKEN"), *audit
	}
	h, err := ui.NewHandler(cfg)
	if err != nil {
		return err
	}
	defer h.Close()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("ui: %w", err)
	}
	scheme := "http"
	if tlsCfg != nil {
		ln, scheme = tls.NewListener(ln, tlsCfg), "https"
	}
	fmt.Fprintf(m.Stdout, "baton: ui on %s://%s/ for %s%s; Ctrl-C stops\n", scheme, ln.Addr(), u.String(), ifAdmin(*admin))
	return m.serveUI(ctx, ln, h)
}

// checkListen makes a --listen address that is not host:port a usage
// error, found before anything is dialled or created (what names the flag
// starts the message).
func checkListen(what, listen string) error {
	if _, err := net.ResolveTCPAddr("tcp", listen); err != nil {
		return usageErr("%s %q: want host:port (%v)", what, listen, err)
	}
	return nil
}

// loopback says whether every address listen (host:port) names is a
// loopback one. An empty host is every interface: not loopback.
func loopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil || host == "" {
		return false
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback()
	}
	ips, err := net.LookupIP(host)
	if err != nil || len(ips) == 0 {
		return false
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return false
		}
	}
	return true
}

func ifAdmin(admin bool) string {
	if admin {
		return " (admin: token from $BATON_UI_TOKEN)"
	}
	return " (read-only)"
}

// serveUI serves h on ln until ctx ends or a signal arrives.
func (m *Main) serveUI(ctx context.Context, ln net.Listener, h http.Handler) error {
	sigs := catchSignals()
	defer sigs.stop()
	done, stop := startHTTP(ln, h)
	defer stop()
	select {
	case <-sigs.c:
	case <-ctx.Done():
	case err := <-done:
		return err
	}
	return nil
}

// startHTTP serves h on ln in the background; stop ends the event
// streams, then the server.
func startHTTP(ln net.Listener, h http.Handler) (done <-chan error, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	d := make(chan error, 1)
	go func() { d <- srv.Serve(ln) }()
	return d, func() {
		cancel()
		sctx, scancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer scancel()
		_ = srv.Shutdown(sctx)
	}
}

// startServeUI serves the page (read-only, every key) beside baton serve's
// etcd at addr, authenticating as root with password if it is not "".
func (m *Main) startServeUI(addr, listen, password string) (stop func(), err error) {
	u, err := store.Parse("etcd://" + addr)
	if err != nil {
		return nil, err
	}
	if password != "" {
		u.User, u.Password = "root", password
	}
	h, err := ui.NewHandler(m.uiConfig(u, &storeFlags{dial: store.DefaultDialTimeout}, ""))
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("serve --ui: %w", err)
	}
	fmt.Fprintf(m.Stdout, "baton: ui on http://%s/ (read-only)\n", ln.Addr())
	_, stopHTTP := startHTTP(ln, h)
	return func() { stopHTTP(); h.Close() }, nil
}

// uiConfig is the page's configuration for the store at u (sf's flags)
// under prefix, read-only.
func (m *Main) uiConfig(u store.URL, sf *storeFlags, prefix string) ui.Config {
	return ui.Config{URL: u, Options: sf.options(), Dial: sf.dial, Prefix: prefix, Stderr: m.Stderr}
}
