package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/batonhq/baton/cmd/baton/internal/demo"
	"github.com/batonhq/baton/etcd/embedded"
	"github.com/batonhq/baton/internal/store"
)

// The demo's session TTLs unless --ttl says otherwise: short, so that a
// killed leader's session ends soon. ZooKeeper gets 4s, the shortest
// session a server with its default tickTime (2000 ms) grants: it refuses
// 2s, and a 2s session is lost on a busy machine whenever a heartbeat's
// reply is more than a second late.
const (
	demoTTL   = 2 * time.Second
	demoZKTTL = store.ShortestZooKeeperTTL
)

// demo is `baton demo [--store URL]`: the whole system end to end, on an
// embedded etcd unless --store names another store. Worker processes (baton
// itself) contend for a lock, elect a leader and lose it to a crash, pass a
// double barrier and drain a queue; the summary checks what each recipe
// promises.
func (m *Main) demo(ctx context.Context, args []string) error {
	var sf storeFlags
	fs := m.newFlags("demo", "demo [--store URL] [--workers 5] [--rounds 6] [--ttl 2s, on ZooKeeper 4s]   (no --store and no $BATON_STORE: an embedded etcd)", &sf, true)
	workers := fs.Int("workers", 5, "lock contenders (election, barrier and queue use up to 4)")
	rounds := fs.Int("rounds", 6, "acquisitions per lock contender")
	// The demo embeds its own etcd unless --store or $BATON_STORE names a
	// store, and uses short sessions so a crash fails over fast.
	sf.url, sf.ttl = m.Getenv("BATON_STORE"), demoTTL
	fs.Lookup("store").DefValue = sf.url
	ttl := fs.Lookup("ttl")
	ttl.DefValue, ttl.Usage = demoTTL.String(), fmt.Sprintf("session TTL, 1s to 24h: how long a killed leader keeps leading (%v on ZooKeeper, the shortest its default tickTime grants)", demoZKTTL)
	pos, argv, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	ttlGiven := false
	fs.Visit(func(f *flag.Flag) { ttlGiven = ttlGiven || f.Name == "ttl" })
	if u, err := store.Parse(sf.url); err == nil && !ttlGiven {
		sf.ttl = u.ShortTTL(demoTTL)
	}
	if len(pos) > 0 || argv != nil {
		return usageErr("demo: unexpected arguments")
	}
	if *workers < 2 || *rounds < 1 {
		return usageErr("demo: --workers must be at least 2 and --rounds at least 1")
	}
	// Bad durations are usage errors before the embedded etcd starts.
	if err := sf.checkDurations(); err != nil {
		return err
	}
	sigs := catchSignals()
	defer sigs.stop()
	ctx, cancel := sigs.cancelling(ctx)
	defer cancel()

	began := time.Now()
	dir, err := os.MkdirTemp("", "baton-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("demo: find the baton executable: %w", err)
	}
	d := &demo.Run{Out: m.Stdout, Exe: exe, Dir: dir, TTL: sf.ttl,
		Prefix: "/baton-demo/" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	defer d.KillAll()

	if sf.url == "" {
		srv, err := embedded.Start(ctx, embedded.Config{DataDir: filepath.Join(dir, "etcd"), Fast: true})
		if err != nil {
			return fmt.Errorf("demo: start embedded etcd: %w", err)
		}
		defer srv.Close()
		sf.url = "etcd://" + srv.Addr()
		fmt.Fprintf(d.Out, "baton demo: embedded etcd on %s (pass --store URL to use ZooKeeper or another etcd)\n", srv.Addr())
	}
	s, err := m.openFor(ctx, sigs, &sf, "demo")
	if err != nil {
		return err
	}
	defer closeStore(s)
	d.Store, d.TLS, d.Session = s.URL, sf.tls, s.Session
	line := fmt.Sprintf("store %s, session TTL %v, names under %s", s.URL, d.TTL, d.Prefix)
	if utf8.RuneCountInString(line) > 100 { // a long URL (postgres://…?sslmode=…) on a line of its own
		line = fmt.Sprintf("store %s\nsession TTL %v, names under %s", s.URL, d.TTL, d.Prefix)
	}
	fmt.Fprintf(d.Out, "%s\n\n", line)

	sum, err := d.Play(ctx, *workers, *rounds)
	if err != nil {
		if ctx.Err() != nil {
			return exitWith(sigStatus(os.Interrupt), errors.New("demo interrupted"))
		}
		return fmt.Errorf("demo: %w", err)
	}
	return d.Summary(sum, time.Since(began))
}
