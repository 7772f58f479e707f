package etcd

import (
	"context"
	"strings"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton/backend"
)

// goneCache remembers, per directory, which keys created up to a revision
// were still present at a later revision. A recipe waiting in line asks
// WaitGone for its predecessors one after another, nearest first, from the
// listing it took when it queued; by the time the nearest is gone, the
// ones before it usually are too. One listing answers all of them, so the
// hand-off costs one read instead of one watch and read per predecessor.
type goneCache struct {
	rev       int64            // the listing's revision
	maxCreate int64            // it covers keys with CreateRevision ≤ maxCreate
	present   map[string]int64 // key → CreateRevision of the keys present
}

// maxGoneDirs bounds the cache; past it the cache starts over.
const maxGoneDirs = 256

// goneDirs is the session's goneCache per directory prefix. A goneCache
// is not changed once kept.
type goneDirs struct {
	mu sync.Mutex
	m  map[string]*goneCache
}

func (d *goneDirs) get(pfx string) (*goneCache, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	g, ok := d.m[pfx]
	return g, ok
}

// keep keeps g for pfx unless a newer listing is kept already.
func (d *goneDirs) keep(pfx string, g *goneCache) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if old, ok := d.m[pfx]; !ok || old.rev <= g.rev {
		if len(d.m) >= maxGoneDirs {
			clear(d.m)
		}
		d.m[pfx] = g
	}
}

// parentPrefix returns the prefix of path's directory ("a/b/" for "a/b/c").
func parentPrefix(path string) string {
	i := strings.LastIndexByte(path, '/')
	return path[:i+1]
}

// knownGone reports whether a listing taken after n was created showed n's
// incarnation gone.
func (c *conn) knownGone(n backend.Node) bool {
	if n.Token == 0 {
		return false
	}
	g, ok := c.gone.get(parentPrefix(n.Path))
	if !ok || n.Token > g.maxCreate {
		return false
	}
	return g.present[n.Path] != n.Token
}

// listedBefore reports whether we hold a listing of n's directory that
// covers n (and showed it present).
func (c *conn) listedBefore(n backend.Node) bool {
	g, ok := c.gone.get(parentPrefix(n.Path))
	return ok && n.Token <= g.maxCreate
}

// checkGone lists the siblings of n created no later than n, at a revision
// no earlier than atLeast, remembers the listing, and reports whether n's
// incarnation is gone.
func (c *conn) checkGone(ctx context.Context, n backend.Node, atLeast int64) (gone bool, rev int64, err error) {
	pfx := parentPrefix(n.Path)
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithMaxCreateRev(n.Token)}
	resp, err := c.readAtLeast(ctx, pfx, max(atLeast, n.Token), opts...)
	if err != nil {
		return false, 0, err
	}
	g := c.remember(pfx, resp.Header.Revision, n.Token, resp.Kvs)
	return g.present[n.Path] != n.Token, g.rev, nil
}

// remember keeps a listing of pfx taken at revision rev that holds every
// key created up to maxCreate, unless a newer one is kept already.
func (c *conn) remember(pfx string, rev, maxCreate int64, kvs []*mvccpb.KeyValue) *goneCache {
	g := &goneCache{rev: rev, maxCreate: maxCreate, present: make(map[string]int64, len(kvs))}
	for _, kv := range kvs {
		g.present[string(kv.Key)] = kv.CreateRevision
	}
	c.gone.keep(pfx, g)
	return g
}

// goneAt answers from a kept listing whether n is gone, if that listing
// covers n and was taken at revision rev or later (gone and known false
// otherwise). A listing taken at or after a watch's creation revision
// needs no second read: anything after it comes through the watch.
func (c *conn) goneAt(n backend.Node, rev int64) (gone bool, at int64, known bool) {
	g, ok := c.gone.get(parentPrefix(n.Path))
	if !ok || g.rev < rev || n.Token > g.maxCreate {
		return false, 0, false
	}
	return g.present[n.Path] != n.Token, g.rev, true
}
