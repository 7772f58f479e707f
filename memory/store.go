// Package memory is a baton backend held in process memory: a real store
// with sessions, ephemeral and sequential nodes, one-shot watches and fault
// hooks (lost create replies, session expiry, partitions, delayed watches).
// It backs the examples and unit tests and runs the same conformance suite
// as ZooKeeper and etcd.
package memory

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// MinTTL is the smallest session TTL the store accepts.
const MinTTL = 10 * time.Millisecond

// Store is one in-memory coordination store. The zero value is not usable;
// call New.
type Store struct {
	mu       sync.Mutex
	nodes    map[string]*node            // path → node
	kids     map[string]map[string]*node // dir → name → node
	cseq     map[string]int64            // dir → sequence counter
	zxid     int64
	sessions map[string]*conn
	nextID   int64
	watches  map[string][]*watch // path or dir → pending watches
	delay    time.Duration
	fires    atomic.Int64
}

type node struct {
	dir, name, kind string
	seq, token      int64
	seqd            bool
	owner           string
	data            []byte
	version         int64 // writes of data since creation
	created         time.Time
}

func (n *node) path() string { return backend.Join(n.dir, n.name) }

func (n *node) public() backend.Node {
	return backend.Node{Path: n.path(), Name: n.name, Kind: n.kind, Seq: n.seq, Token: n.token, Owner: n.owner, Created: n.created, Version: n.version}
}

// watch is one pending one-shot watch. kind is "gone", "kids", "exists"
// or "data" (a write of the node's data, or its removal).
type watch struct {
	kind string
	ch   chan struct{}
	c    *conn
}

// New returns an empty store.
func New() *Store {
	return &Store{
		nodes:    map[string]*node{},
		kids:     map[string]map[string]*node{},
		cseq:     map[string]int64{},
		sessions: map[string]*conn{},
		watches:  map[string][]*watch{},
	}
}

// Open starts a session (WithTTL, WithTelemetry).
func (s *Store) Open(ctx context.Context, opts ...Option) (*baton.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o := options{ttl: baton.DefaultTTL}
	for _, opt := range opts {
		opt(&o)
	}
	ttl := o.ttl
	if ttl < MinTTL {
		return nil, fmt.Errorf("%w: %v is below the memory store's minimum %v", baton.ErrInvalidTTL, ttl, MinTTL)
	}
	s.mu.Lock()
	s.nextID++
	c := &conn{st: s, id: fmt.Sprintf("%x", s.nextID), ttl: ttl, done: make(chan struct{}), heal: make(chan struct{})}
	close(c.heal)
	s.sessions[c.id] = c
	s.mu.Unlock()
	return baton.NewSession(c, o.telemetry), nil
}

// WatchFires is the number of watch notifications the store has sent, less
// those a session's own delete sent itself (see fire).
func (s *Store) WatchFires() int64 { return s.fires.Load() }

// PendingWatches is the number of watches set and not yet fired.
func (s *Store) PendingWatches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ws := range s.watches {
		n += len(ws)
	}
	return n
}

// DelayWatches makes every watch notification arrive d late (0 restores).
func (s *Store) DelayWatches(d time.Duration) {
	s.mu.Lock()
	s.delay = d
	s.mu.Unlock()
}

// Expire expires the session with the given id now, as the server does
// when a client has been silent for its TTL: its ephemeral nodes go and its
// Done closes with baton.ErrSessionExpired.
func (s *Store) Expire(id string) {
	s.mu.Lock()
	c := s.sessions[id]
	s.mu.Unlock()
	if c != nil {
		c.end(baton.ErrSessionExpired, true)
	}
}

// DropCreateReply makes the next Create of session id reach the store and
// be applied, while its reply is lost as in a connection loss.
func (s *Store) DropCreateReply(id string) {
	s.mu.Lock()
	if c := s.sessions[id]; c != nil {
		c.dropCreates++
	}
	s.mu.Unlock()
}

// Partition cuts session id off the store until the returned heal is
// called: its calls block, the client counts the session lost after its TTL
// minus a margin, and the store expires it after the full TTL.
func (s *Store) Partition(id string) (heal func()) {
	s.mu.Lock()
	c := s.sessions[id]
	if c == nil || c.partitioned {
		s.mu.Unlock()
		return func() {}
	}
	c.partitioned = true
	c.cutAt = time.Now()
	c.heal = make(chan struct{})
	lost := time.AfterFunc(c.ttl-margin(c.ttl), func() { c.end(baton.ErrSessionLost, false) })
	expire := time.AfterFunc(c.ttl, func() { s.expireServerSide(c) })
	s.mu.Unlock()
	return func() {
		lost.Stop()
		expire.Stop()
		s.mu.Lock()
		if c.partitioned {
			c.partitioned = false
			close(c.heal)
		}
		s.mu.Unlock()
	}
}

// margin is how long before the server could expire a session the client
// gives it up.
func margin(ttl time.Duration) time.Duration { return ttl / 5 }

// validDir checks the parent of a node to create. A plain node may sit at
// the top of the keyspace (a Barrier named "deploy", its key its name, as
// on etcd): its dir is "". A sequential node needs a real parent.
func validDir(dir string, f backend.Flags) error {
	if dir == "" && f&backend.Sequential == 0 {
		return nil
	}
	return validPath(dir)
}

func validPath(p string) error {
	if p == "" {
		return fmt.Errorf("%w: empty name", baton.ErrInvalidName)
	}
	for _, r := range p {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: %q has a control character", baton.ErrInvalidName, p)
		}
	}
	for _, el := range strings.Split(p, "/") {
		if el == "." || el == ".." {
			return fmt.Errorf("%w: %q has a relative element", baton.ErrInvalidName, p)
		}
	}
	return nil
}

// fire wakes the watches registered under key, once each. A watch of self,
// the session whose own change fires it (a holder deleting the node it
// watches), is woken but not counted: the counts are of notifications one
// session's change sends the others (WatchCounter). Caller holds mu.
func (s *Store) fire(key string, self *conn, kinds ...string) {
	ws := s.watches[key]
	keep := ws[:0]
	for _, w := range ws {
		hit := false
		for _, k := range kinds {
			hit = hit || w.kind == k
		}
		if hit {
			close(w.ch)
			if w.c != self {
				s.fires.Add(1)
				w.c.events.Add(1)
			}
		} else {
			keep = append(keep, w)
		}
	}
	if len(keep) == 0 {
		delete(s.watches, key)
	} else {
		s.watches[key] = keep
	}
}

// put adds a node. Caller holds mu.
func (s *Store) put(dir, kind string, data []byte, f backend.Flags, owner, uid string) (*node, error) {
	s.cseq[dir]++
	seq := s.cseq[dir]
	name := kind
	if f&backend.Sequential != 0 {
		switch {
		case kind == backend.KindQueue:
			name = fmt.Sprintf("qn-%010d", seq)
		default:
			name = fmt.Sprintf("_c_%s-%s-%010d", uid, kind, seq)
		}
	} else if s.kids[dir][name] != nil {
		return nil, fmt.Errorf("%w: %s", baton.ErrExists, backend.Join(dir, name))
	}
	s.zxid++
	n := &node{dir: dir, name: name, kind: kind, seq: seq, seqd: f&backend.Sequential != 0,
		token: s.zxid, data: append([]byte(nil), data...), created: time.Now()}
	if f&backend.Ephemeral != 0 {
		n.owner = owner
	}
	if s.kids[dir] == nil {
		s.kids[dir] = map[string]*node{}
	}
	s.kids[dir][name] = n
	s.nodes[n.path()] = n
	s.fire(n.path(), nil, "exists")
	s.fire(dir, nil, "kids")
	return n, nil
}

// remove deletes a node; by is the session that deletes it, or nil for the
// store itself (an ended session's ephemerals). Caller holds mu.
func (s *Store) remove(n *node, by *conn) {
	delete(s.nodes, n.path())
	delete(s.kids[n.dir], n.name)
	if len(s.kids[n.dir]) == 0 {
		delete(s.kids, n.dir)
	}
	s.zxid++
	s.fire(n.path(), by, "gone", "data")
	s.fire(n.dir, nil, "kids")
}

// lookup finds the live incarnation of want. Caller holds mu.
func (s *Store) lookup(want backend.Node) *node {
	n := s.nodes[want.Path]
	if n == nil || (want.Token != 0 && n.token != want.Token) {
		return nil
	}
	return n
}

func (s *Store) children(dir string) []backend.Node {
	var seqd, plain []backend.Node
	for _, n := range s.kids[dir] {
		if n.seqd {
			seqd = append(seqd, n.public())
		} else {
			plain = append(plain, n.public())
		}
	}
	sort.Slice(seqd, func(i, j int) bool { return seqd[i].Seq < seqd[j].Seq })
	sort.Slice(plain, func(i, j int) bool { return plain[i].Name < plain[j].Name })
	return append(seqd, plain...)
}

// expireServerSide removes a session's ephemeral nodes.
func (s *Store) expireServerSide(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions[c.id] != c {
		return
	}
	delete(s.sessions, c.id)
	var mine []*node
	for _, n := range s.nodes {
		if n.owner == c.id {
			mine = append(mine, n)
		}
	}
	sort.Slice(mine, func(i, j int) bool { return mine[i].token < mine[j].token })
	for _, n := range mine {
		s.remove(n, nil)
	}
}
