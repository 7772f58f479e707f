package store

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/layout"
)

// Inspector reads a store's names as `baton status` and `baton ui` show
// them, without taking part in any recipe. Inspect makes the one of the
// store's kind: over a Session (ZooKeeper, etcd, memory), by the layout
// reader and the store's watches; or on every Redis server, by the keys
// of package redis, re-read or through keyspace notifications.
type Inspector interface {
	// Connect makes the inspector ready to read: on a store with
	// sessions, it opens one, or a new one if the one in use has ended
	// (reopened says so).
	Connect(ctx context.Context) (reopened bool, err error)
	// Name reads one name and waits for its change.
	Name(name string) NameReader
	// List lists the names under prefix, sorted, at most limit.
	List(ctx context.Context, prefix string, limit int) (*Listing, error)
	// Wait returns once the names of l, or what one of names holds, may
	// have changed since they were read, or when ctx ends.
	Wait(ctx context.Context, l *Listing, names []NameReader) error
	// Live says how Wait learns of changes: LiveWatches,
	// LiveNotifications or LivePolling.
	Live(ctx context.Context) string
	// Conn is the session's Conn, for the ui's admin actions; a store
	// without sessions has none (ErrReadOnly).
	Conn(ctx context.Context) (backend.Conn, error)
	// Close closes what the inspector opened, bounded by ctx.
	Close(ctx context.Context)
}

// Glance reads one name, without a wait.
type Glance interface {
	// Read reads what the name holds now.
	Read(ctx context.Context) (layout.Report, error)
	// Other reads the name's other spelling (with its leading "/" taken
	// off or added) where the store keeps that as another lock (etcd,
	// Redis: names are kept as written, baton.CleanName): its name and
	// report, or ok false where there is none or it cannot be read.
	Other(ctx context.Context) (name string, rep layout.Report, ok bool)
}

// NameReader reads one name and waits for its change.
type NameReader interface {
	Glance
	// Wait returns once the name may differ from its last Read (or
	// after a while, so that ages and TTLs are refreshed).
	Wait(ctx context.Context) error
}

// Listing is what List found under a prefix: the names and where the
// store was, for Wait.
type Listing struct {
	Names []string
	More  bool // some names were left out (limit)

	prefix string
	limit  int
	rev    int64          // etcd: the revision the names were listed at
	kids   []backend.Node // ZooKeeper: the prefix's children
	flat   bool           // listed by a dirLister (postgres): no children to watch
}

// How an Inspector learns of changes (Inspector.Live).
const (
	LiveWatches       = "store watches"
	LiveNotifications = "keyspace notifications"
	LivePolling       = "a read every 500 ms (no keyspace notifications)"
)

// ErrReadOnly is Inspector.Conn's error on a store without sessions.
var ErrReadOnly = errors.New("admin actions are for ZooKeeper and etcd; the Redis page is read-only")

// Inspect returns the inspector of the store at u (with o's dial timeout
// and TLS files). On a store with sessions, open opens it (the caller's
// Open, which may warn); nil means Open(ctx, u, o). It does no I/O.
func Inspect(u URL, o Options, open func(context.Context) (*Store, error)) Inspector {
	if o.DialTimeout <= 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if u.isRedis() {
		return &redisInspector{u: u, o: o}
	}
	if open == nil {
		open = func(ctx context.Context) (*Store, error) { return Open(ctx, u, o) }
	}
	return &sessionInspector{u: u, o: o, open: open}
}

// Admin is nil where the ui may offer its admin actions (deleting a
// node), else ErrReadOnly.
func (u URL) Admin() error {
	if u.isRedis() {
		return ErrReadOnly
	}
	return nil
}

// otherSpelling is name with its leading "/" taken off or added, where
// the store keeps the two as two locks, else "" (also where that is no
// name: too long).
func (u URL) otherSpelling(name string) string {
	other, ok := strings.CutPrefix(name, "/")
	if !ok {
		other = "/" + name
	}
	if _, err := baton.CleanName(other); err != nil || u.LockName(other) == u.LockName(name) {
		return ""
	}
	return other
}

// readTimeout bounds one read of a name through the layout reader.
func readTimeout(dial time.Duration) time.Duration { return dial + 10*time.Second }
