package layout

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// Stores a Listing can come from: they differ in the names peers use.
const (
	StoreZooKeeper = "zookeeper"
	StoreEtcd      = "etcd"
	StoreMemory    = "memory"
)

// Directories a Listing holds besides the name's own children ("").
const (
	DirLocks   = "locks"   // Semaphore (baton, Curator): its admission lock
	DirLeases  = "leases"  // Semaphore (baton, Curator): the leases
	DirClaims  = "claims"  // ReliableQueue: in-flight claims
	DirEntries = "entries" // kazoo LockingQueue: its items
	DirTaken   = "taken"   // kazoo LockingQueue: its claims
	// etcd's experimental recipes: RWMutex (NAME/read/…, NAME/write/…)
	// and DoubleBarrier (NAME/waiters/…) (etcd only).
	DirEtcdRead    = "read"
	DirEtcdWrite   = "write"
	DirEtcdWaiters = "waiters"
	// DirKazooLock is the sibling NAME-__lock__ where kazoo's Semaphore
	// queues for admission (ZooKeeper only).
	DirKazooLock = "-__lock__"
)

// NodePermits is the child of a Semaphore's name (baton's, or Curator's
// sharing it through a SharedCount) that records its number of permits:
// 4 bytes, a big-endian int, as Curator's SharedCount stores it.
const NodePermits = "permits"

// maxDetailed bounds the nodes per directory whose data and metadata Read
// fetches one by one; a long queue is counted, not read.
const maxDetailed = 200

// Listing is what a store holds under a name, as Read gathered it.
type Listing struct {
	Name  string
	Store string // StoreZooKeeper, StoreEtcd or StoreMemory
	// Exists says the name itself is a node (a set barrier, a ZooKeeper
	// directory); Data is its data.
	Exists bool
	Data   []byte
	// Dir says the name's node has or had children (baton.Node.Dir): a
	// set barrier cannot be told from a ZooKeeper container directory.
	Dir bool
	// Dirs holds the children of the name ("") and of the directories
	// recipes keep under it (DirLocks, …), in Seq order.
	Dirs map[string][]Child
}

// Child is one node with its data.
type Child struct {
	backend.Node
	Data []byte
	// TTL is the time left on the owner's lease where the store says
	// (etcd), else -1.
	TTL time.Duration
}

// LeaseTTLer is an optional baton.Conn capability: the time left on the
// lease or session that owns ephemeral nodes (etcd's LeaseTimeToLive).
type LeaseTTLer interface {
	OwnerTTL(ctx context.Context, owner string) (time.Duration, error)
}

// Read gathers what the store holds under name: its children, the
// directories baton's and its peers' recipes keep there, and the data of
// each node (up to a bound per directory).
func Read(ctx context.Context, c backend.Conn, store, name string) (Listing, error) {
	l := Listing{Name: name, Store: store, Dirs: map[string][]Child{}}
	data, n, err := c.Get(ctx, name)
	switch {
	case err == nil:
		l.Exists, l.Data, l.Dir = true, data, n.Dir
	case !errors.Is(err, baton.ErrNotFound):
		return l, err
	}
	root, err := readDir(ctx, c, name)
	if err != nil {
		return l, err
	}
	l.Dirs[""] = root
	subs := []string{DirLocks, DirLeases, DirClaims}
	switch store {
	case StoreZooKeeper:
		subs = append(subs, DirEntries, DirTaken)
	case StoreEtcd:
		subs = append(subs, DirEtcdRead, DirEtcdWrite, DirEtcdWaiters)
	}
	for _, d := range subs {
		// ZooKeeper lists directories among the children; etcd has no
		// directory keys, so there every one is looked for.
		if store == StoreZooKeeper && !hasChild(root, d) {
			continue
		}
		kids, err := readDir(ctx, c, backend.Join(name, d))
		if err != nil {
			return l, err
		}
		if len(kids) > 0 {
			l.Dirs[d] = kids
		}
	}
	if store == StoreZooKeeper && !strings.HasSuffix(name, "/") {
		kids, err := readDir(ctx, c, name+DirKazooLock)
		if err != nil {
			return l, err
		}
		if len(kids) > 0 {
			l.Dirs[DirKazooLock] = kids
		}
	}
	if t, ok := c.(LeaseTTLer); ok {
		ttls := map[string]time.Duration{}
		for d, kids := range l.Dirs {
			for i, k := range kids {
				if k.Owner == "" {
					continue
				}
				left, seen := ttls[k.Owner]
				if !seen {
					left = -1
					if v, err := t.OwnerTTL(ctx, k.Owner); err == nil {
						left = v
					}
					ttls[k.Owner] = left
				}
				l.Dirs[d][i].TTL = left
			}
		}
	}
	return l, nil
}

func hasChild(kids []Child, name string) bool {
	for _, k := range kids {
		if k.Name == name {
			return true
		}
	}
	return false
}

// readDir lists dir and reads each child's data and metadata (ZooKeeper
// lists names only). A node gone in between is left out.
func readDir(ctx context.Context, c backend.Conn, dir string) ([]Child, error) {
	kids, err := c.Children(ctx, dir)
	if err != nil {
		return nil, err
	}
	out := make([]Child, 0, len(kids))
	for i, k := range kids {
		ch := Child{Node: k, TTL: -1}
		if i < maxDetailed {
			data, n, err := c.Get(ctx, k.Path)
			if errors.Is(err, baton.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			ch.Data = data
			if ch.Token == 0 {
				ch.Token = n.Token
			}
			if ch.Owner == "" {
				ch.Owner = n.Owner
			}
			if ch.Created.IsZero() {
				ch.Created = n.Created
			}
		}
		out = append(out, ch)
	}
	return out, nil
}
