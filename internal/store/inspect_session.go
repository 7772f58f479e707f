package store

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
)

// sessionInspector reads a store with sessions through the layout reader.
// Its session is opened by Connect and again after it ends, so a store
// that is down at first or goes away reads as an error until it is back.
type sessionInspector struct {
	u    URL
	o    Options
	open func(context.Context) (*Store, error)

	mu  sync.Mutex
	s   *Store
	cli *clientv3.Client // etcd: lists and watches the prefix
}

func (in *sessionInspector) Connect(ctx context.Context) (bool, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.s != nil && in.s.Err() == nil {
		return false, nil
	}
	s, err := in.open(ctx)
	if err != nil {
		return false, err
	}
	old := in.s
	if old != nil {
		closeBounded(context.WithoutCancel(ctx), old)
	}
	in.s = s
	return old != nil, nil
}

// store is the session in use (nil before Connect), ended or not.
func (in *sessionInspector) store() *Store {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.s
}

// closeBounded ends s's session, bounded.
func closeBounded(ctx context.Context, s *Store) {
	ctx, cancel := context.WithTimeout(ctx, closeTimeout)
	defer cancel()
	_ = s.Close(ctx)
}

// closeTimeout bounds the close of a session an inspector opened.
const closeTimeout = 5 * time.Second

func (in *sessionInspector) Close(ctx context.Context) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.s != nil {
		_ = in.s.Close(ctx)
	}
	if in.cli != nil {
		_ = in.cli.Close()
	}
}

func (in *sessionInspector) Live(context.Context) string { return LiveWatches }

func (in *sessionInspector) Conn(ctx context.Context) (backend.Conn, error) {
	if _, err := in.Connect(ctx); err != nil {
		return nil, err
	}
	return in.store().Session.Conn(), nil
}

func (in *sessionInspector) Name(name string) NameReader {
	return &sessionName{store: in.store, dial: in.o.DialTimeout, name: name}
}

// etcdClient returns the client that lists and watches the prefix: etcd
// has no directories, so names are found from the keys under it.
func (in *sessionInspector) etcdClient() (*clientv3.Client, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cli != nil {
		return in.cli, nil
	}
	cfg := clientv3.Config{DialTimeout: in.o.DialTimeout, Username: in.u.User, Password: in.u.Password,
		Logger: zap.NewNop()}
	for _, h := range in.u.Hosts {
		scheme := "http://"
		if in.u.TLS {
			scheme = "https://"
		}
		cfg.Endpoints = append(cfg.Endpoints, scheme+h)
	}
	if in.u.TLS {
		tc, err := in.o.TLS.Config("")
		if err != nil {
			return nil, err
		}
		cfg.TLS = tc
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, err
	}
	in.cli = cli
	return cli, nil
}

// dirLister is a Conn that lists the directories under a prefix itself,
// its keys not being a tree of nodes (postgres).
type dirLister interface {
	Dirs(ctx context.Context, prefix string, limit int) (dirs []string, more bool, err error)
}

func (in *sessionInspector) List(ctx context.Context, prefix string, limit int) (*Listing, error) {
	l := &Listing{prefix: prefix, limit: limit}
	if in.u.Layout() == layout.StoreEtcd {
		cli, err := in.etcdClient()
		if err != nil {
			return nil, err
		}
		resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(int64(limit)))
		if err != nil {
			return nil, err
		}
		l.rev, l.More = resp.Header.Revision, resp.More
		set := map[string]bool{}
		for _, kv := range resp.Kvs {
			set[etcdName(string(kv.Key))] = true
		}
		delete(set, "")
		l.Names = sortedKeys(set)
		return l, nil
	}
	if _, err := in.Connect(ctx); err != nil {
		return nil, err
	}
	if dl, ok := in.store().Session.Conn().(dirLister); ok {
		dirs, more, err := dl.Dirs(ctx, prefix, limit)
		if err != nil {
			return nil, err
		}
		l.More, l.flat = more, true
		set := map[string]bool{}
		for _, d := range dirs {
			set[etcdName(d+"/x")] = true
		}
		delete(set, "")
		l.Names = sortedKeys(set)
		return l, nil
	}
	kids, err := in.store().Session.Conn().Children(ctx, prefix)
	if err != nil {
		return nil, err
	}
	l.kids = kids
	set := map[string]bool{}
	for _, k := range kids {
		switch {
		case k.Seq > 0 && k.Seq != 1<<63-1:
			set[prefix] = true // the prefix is itself a recipe's name
		case k.Name == "zookeeper" && prefix == "/",
			strings.HasSuffix(k.Name, layout.DirKazooLock):
		default:
			set[backend.Join(prefix, k.Name)] = true
		}
	}
	l.Names = sortedKeys(set)
	return l, nil
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

// Wait watches the store: on etcd one watch on the prefix from the
// revision listed; on ZooKeeper the prefix's children and each name's
// directories.
func (in *sessionInspector) Wait(ctx context.Context, l *Listing, names []NameReader) error {
	if in.u.Layout() == layout.StoreEtcd {
		cli, err := in.etcdClient()
		if err != nil {
			return err
		}
		wch := cli.Watch(clientv3.WithRequireLeader(ctx), l.prefix, clientv3.WithPrefix(), clientv3.WithRev(l.rev+1))
		select {
		case <-wch:
		case <-ctx.Done():
		}
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	changed := make(chan error, len(names)+1)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	if _, err := in.Connect(ctx); err != nil {
		return err
	}
	c := in.store().Session.Conn()
	wg.Add(1)
	go func() {
		defer wg.Done()
		if l.flat {
			// No directory to watch: the names under the prefix are
			// listed again a second later.
			t := time.NewTimer(time.Second)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
			}
			changed <- nil
			return
		}
		changed <- c.WaitChildren(ctx, l.prefix, l.kids)
	}()
	for _, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			changed <- n.Wait(ctx)
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

// sessionName reads a name through the layout reader, and waits for its
// change with the store's watches.
type sessionName struct {
	store func() *Store
	dial  time.Duration
	name  string
	last  layout.Listing
}

func (r *sessionName) conn() (backend.Conn, string, error) {
	s := r.store()
	if s == nil {
		return nil, "", errors.New("store: not connected")
	}
	return s.Session.Conn(), s.URL.Layout(), nil
}

func (r *sessionName) Read(ctx context.Context) (layout.Report, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout(r.dial))
	defer cancel()
	c, kind, err := r.conn()
	if err == nil {
		r.last, err = layout.Read(ctx, c, kind, r.name)
	}
	if err != nil {
		return layout.Report{}, fmt.Errorf("status %s: %w", r.name, err)
	}
	return layout.Describe(r.last, time.Now()), nil
}

func (r *sessionName) Other(ctx context.Context) (string, layout.Report, bool) {
	c, kind, err := r.conn()
	if err != nil {
		return "", layout.Report{}, false
	}
	return otherOnSession(ctx, c, r.store().URL, kind, r.name, r.dial)
}

// otherOnSession reads name's other spelling on c, if the store keeps it
// as another lock.
func otherOnSession(ctx context.Context, c backend.Conn, u URL, kind, name string, dial time.Duration) (string, layout.Report, bool) {
	other := u.otherSpelling(name)
	if other == "" {
		return "", layout.Report{}, false
	}
	ctx, cancel := context.WithTimeout(ctx, readTimeout(dial))
	defer cancel()
	l, err := layout.Read(ctx, c, kind, other)
	if err != nil {
		return "", layout.Report{}, false
	}
	return other, layout.Describe(l, time.Now()), true
}

// Wait returns once any directory read last differs, or the name itself
// appears or goes, watched with the store's own watches. It also returns
// after a minute, so ages and TTLs are refreshed now and then.
func (r *sessionName) Wait(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c, kind, err := r.conn()
	if err != nil {
		return err
	}
	changed := make(chan error, 16)
	watch := func(f func() error) {
		go func() { changed <- f() }()
	}
	dirs := []string{"", layout.DirLocks, layout.DirLeases, layout.DirClaims}
	if kind == layout.StoreZooKeeper {
		dirs = append(dirs, layout.DirEntries, layout.DirTaken)
	}
	for _, d := range dirs {
		path := r.name
		if d != "" {
			path = strings.TrimSuffix(r.name, "/") + "/" + d
		}
		since := nodesOf(r.last.Dirs[d])
		watch(func() error { return c.WaitChildren(ctx, path, since) })
	}
	if kind == layout.StoreZooKeeper {
		since := nodesOf(r.last.Dirs[layout.DirKazooLock])
		watch(func() error { return c.WaitChildren(ctx, r.name+layout.DirKazooLock, since) })
	}
	if !r.last.Exists {
		watch(func() error { _, err := c.WaitExists(ctx, r.name); return err })
	}
	err = <-changed
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		return nil // the periodic refresh
	}
	return err
}
