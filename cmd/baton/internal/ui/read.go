package ui

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/layout"
	"github.com/batonhq/baton/internal/store"
)

// Bounds on the work one page costs the server, whatever the prefix holds.
const (
	PerPage    = 25               // instances per page: each one is read with layout.Read
	MaxPerPage = 100              // the most a page may ask for (?per_page=)
	MaxEntries = 50               // nodes shown per instance; the rest are counted
	readers    = 8                // names of a page read at once
	maxNames   = 1e5              // names listed under the prefix (ZooKeeper children, etcd keys)
	refresh    = 10 * time.Second // a page is re-read this often without a change (ages, TTLs)
)

// View is the page's data: one page of the instances under the prefix.
type View struct {
	Store     string     `json:"store"`
	Prefix    string     `json:"prefix"`
	Admin     bool       `json:"admin"`
	Page      int        `json:"page"`
	Pages     int        `json:"pages"`
	PerPage   int        `json:"per_page"`
	Total     int        `json:"total"`
	Truncated bool       `json:"truncated,omitempty"`
	Error     string     `json:"error,omitempty"`
	Live      string     `json:"live"` // how changes reach the page
	At        time.Time  `json:"at"`
	Instances []Instance `json:"instances"`
}

// Instance is one name's report, with at most MaxEntries nodes.
type Instance struct {
	layout.Report
	More  int        `json:"more,omitempty"`
	Error string     `json:"error,omitempty"`
	Chart *ChartView `json:"chart,omitempty"` // nil: no acquisition seen lately
}

// reader reads the store for the page. Its session is opened when first
// needed and again after it ends, so a store that is down at start or
// goes away shows as an error on the page until it is back.
type reader struct {
	u      store.URL
	opts   store.Options
	dial   time.Duration
	tls    store.TLSFiles
	prefix string
	admin  bool
	source func(s *store.Store, name string) Source
	// redisReport describes a Redis lock's holder and waiters.
	redisReport func(name string, locks []store.RedisLock, now time.Time) layout.Report
	chart       *chart

	mu   sync.Mutex
	s    *store.Store
	cli  *clientv3.Client      // etcd: lists and watches the prefix
	rin  *store.RedisInspector // Redis: reads every server
	live string                // Redis: LiveNotifications or LivePolling, once known
}

func (b *reader) kind() string {
	return b.u.Layout()
}

// closeStore ends the session, bounded.
func closeStore(s *store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	_ = s.Close(ctx)
}

// conn returns an open session, opening one if needed.
func (b *reader) conn(ctx context.Context) (*store.Store, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.s != nil && b.s.Session.Err() == nil {
		return b.s, nil
	}
	if b.s != nil {
		closeStore(b.s)
		b.s = nil
	}
	// store.Open bounds the dial by --dial-timeout itself, and then names
	// the last connection error (a ctx of the same deadline would end
	// first and leave only "context deadline exceeded").
	s, err := store.Open(ctx, b.u, b.opts)
	if err != nil {
		return nil, err
	}
	b.s = s
	return s, nil
}

// etcdClient returns the client that lists and watches the prefix: etcd
// has no directories, so names are found from the keys under it.
func (b *reader) etcdClient() (*clientv3.Client, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cli != nil {
		return b.cli, nil
	}
	cfg := clientv3.Config{DialTimeout: b.dial, Username: b.u.User, Password: b.u.Password,
		Logger: zap.NewNop()}
	for _, h := range b.u.Hosts {
		scheme := "http://"
		if b.u.TLS {
			scheme = "https://"
		}
		cfg.Endpoints = append(cfg.Endpoints, scheme+h)
	}
	if b.u.TLS {
		tc, err := b.tls.Config("")
		if err != nil {
			return nil, err
		}
		cfg.TLS = tc
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, err
	}
	b.cli = cli
	return cli, nil
}

func (b *reader) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.s != nil {
		closeStore(b.s)
	}
	if b.cli != nil {
		_ = b.cli.Close()
	}
	if b.rin != nil {
		b.rin.Close()
	}
}

// snapshot is a view with what the server needs to wait for its change.
type snapshot struct {
	view View
	rev  int64          // etcd: the revision the names were listed at
	kids []backend.Node // ZooKeeper: the prefix's children
	srcs []Source       // the page's names, to watch
}

// names lists the instance names under the prefix, sorted.
func (b *reader) names(ctx context.Context, snap *snapshot) ([]string, error) {
	if b.kind() == layout.StoreEtcd {
		cli, err := b.etcdClient()
		if err != nil {
			return nil, err
		}
		resp, err := cli.Get(ctx, b.prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(maxNames))
		if err != nil {
			return nil, err
		}
		snap.rev = resp.Header.Revision
		snap.view.Truncated = resp.More
		set := map[string]bool{}
		for _, kv := range resp.Kvs {
			set[etcdName(string(kv.Key))] = true
		}
		delete(set, "")
		return sortedKeys(set), nil
	}
	s, err := b.conn(ctx)
	if err != nil {
		return nil, err
	}
	kids, err := s.Session.Conn().Children(ctx, b.prefix)
	if err != nil {
		return nil, err
	}
	snap.kids = kids
	set := map[string]bool{}
	for _, k := range kids {
		switch {
		case k.Seq > 0 && k.Seq != 1<<63-1:
			set[b.prefix] = true // the prefix is itself a recipe's name
		case k.Name == "zookeeper" && b.prefix == "/",
			strings.HasSuffix(k.Name, layout.DirKazooLock):
		default:
			set[backend.Join(b.prefix, k.Name)] = true
		}
	}
	return sortedKeys(set), nil
}

// etcdName is the recipe name a key belongs to: its directory, less the
// directories recipes keep under their name (a semaphore's leases, …).
func etcdName(key string) string {
	i := strings.LastIndexByte(key, '/')
	if i < 0 {
		return ""
	}
	name := key[:i]
	switch name[strings.LastIndexByte(name, '/')+1:] {
	case layout.DirLocks, layout.DirLeases, layout.DirClaims, layout.DirEtcdRead, layout.DirEtcdWrite, layout.DirEtcdWaiters:
		if j := strings.LastIndexByte(name, '/'); j >= 0 {
			name = name[:j]
		}
	}
	return name
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// read reads one page: the names under the prefix, then each name on the
// page with the layout reader. An unreadable store is the view's Error.
func (b *reader) read(ctx context.Context, page, per int) *snapshot {
	if per <= 0 {
		per = PerPage
	}
	per = min(per, MaxPerPage)
	snap := &snapshot{view: View{Store: b.u.String(), Prefix: b.prefix, Admin: b.admin, PerPage: per,
		Live: LiveWatches, At: time.Now(), Instances: []Instance{}}}
	v := &snap.view
	rctx, cancel := context.WithTimeout(ctx, b.dial+3*time.Second)
	defer cancel()
	if !b.u.HasSessions() {
		b.readRedis(rctx, snap, page, per)
		return snap
	}
	// The session first: opening it names why a store cannot be reached
	// (refused, no route, TLS wanted) within --dial-timeout, where etcd's
	// listing would wait out its deadline and say only that it passed.
	if _, err := b.conn(rctx); err != nil {
		v.Error = fmt.Sprintf("cannot read %s under %q: %v", v.Store, b.prefix, err)
		return snap
	}
	names, err := b.names(rctx, snap)
	if err != nil {
		v.Error = fmt.Sprintf("cannot read %s under %q: %v", v.Store, b.prefix, err)
		return snap
	}
	names = b.paginate(v, names, page, per)
	s, err := b.conn(rctx)
	if err != nil {
		v.Error = fmt.Sprintf("cannot open %s: %v", v.Store, err)
		return snap
	}
	// The names are read readers at a time: each is several requests
	// (one a directory), and a page read one name after another spends
	// most of its time waiting for replies.
	srcs := make([]Source, len(names))
	reps := make([]layout.Report, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	turns := make(chan struct{}, readers)
	for i, name := range names {
		srcs[i] = b.source(s, name)
		wg.Add(1)
		turns <- struct{}{}
		go func() {
			defer func() { <-turns; wg.Done() }()
			reps[i], errs[i] = srcs[i].Read(rctx)
		}()
	}
	wg.Wait()
	for i, name := range names {
		inst := Instance{Report: reps[i]}
		inst.Name = name
		if errs[i] != nil {
			inst.Error = errs[i].Error()
		} else {
			snap.srcs = append(snap.srcs, srcs[i])
			b.chart.observe(name, inst.Entries, v.At)
		}
		inst.Chart = b.chart.view(name, time.Now())
		if n := len(inst.Entries); n > MaxEntries {
			inst.Entries, inst.More = inst.Entries[:MaxEntries], n-MaxEntries
		}
		v.Instances = append(v.Instances, inst)
	}
	return snap
}

// paginate sets v's counts and returns the names on its page.
func (b *reader) paginate(v *View, names []string, page, per int) []string {
	v.Total = len(names)
	v.Pages = max(1, (len(names)+per-1)/per)
	v.Page = min(max(page, 1), v.Pages)
	from := (v.Page - 1) * per
	return names[from:min(from+per, len(names))]
}

// wait returns when something the snapshot shows may have changed, seen by
// the store's watches: on etcd one watch on the prefix from the revision
// listed; on ZooKeeper the prefix's children and each name's directories.
// It also returns after refresh (ages and TTLs move), and soon after an
// error (the store is retried).
func (b *reader) wait(ctx context.Context, snap *snapshot) error {
	ctx, cancel := context.WithTimeout(ctx, refresh)
	defer cancel()
	if snap.view.Error != "" {
		select {
		case <-ctx.Done():
		case <-time.After(time.Second): // retry a failed store
		}
		return nil
	}
	if !b.u.HasSessions() {
		return b.waitRedis(ctx, snap)
	}
	if b.kind() == layout.StoreEtcd {
		cli, err := b.etcdClient()
		if err != nil {
			return err
		}
		wch := cli.Watch(clientv3.WithRequireLeader(ctx), b.prefix, clientv3.WithPrefix(), clientv3.WithRev(snap.rev+1))
		select {
		case <-wch:
		case <-ctx.Done():
		}
		return nil
	}
	changed := make(chan error, len(snap.srcs)+1)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	s, err := b.conn(ctx)
	if err != nil {
		return err
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		changed <- s.Session.Conn().WaitChildren(ctx, b.prefix, snap.kids)
	}()
	for _, src := range snap.srcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			changed <- src.Wait(ctx)
		}()
	}
	select {
	case err := <-changed:
		if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			return err
		}
	case <-ctx.Done():
	}
	return nil
}
