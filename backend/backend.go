package backend

import (
	"context"
	"time"
)

// Flags say how a node is created.
type Flags uint8

const (
	// Ephemeral binds the node to the session: it is removed when the
	// session ends.
	Ephemeral Flags = 1 << iota
	// Sequential asks the store to order the node after every sibling
	// created before it. The backend names a sequential node from its kind
	// in its own dialect; a non-sequential node is named kind verbatim.
	Sequential
)

// Node kinds the recipes create. A backend maps each to its dialect's
// name (Curator's "_c_<uuid>-lock-<seq>" on ZooKeeper, "NAME/<lease>" on
// etcd) and parses foreign contenders back to the same kinds.
const (
	KindLock  = "lock"  // Mutex contender
	KindRead  = "read"  // RWMutex reader
	KindWrite = "write" // RWMutex writer
	KindLatch = "latch" // Election candidate
	KindLease = "lease" // Semaphore lease
	KindQueue = "qn"    // Queue item
)

// Node is one child of a directory as a backend reports it.
type Node struct {
	// Path is the node's full path (ZooKeeper) or key (etcd).
	Path string
	// Name is the last element of Path.
	Name string
	// Kind is the recipe kind parsed from the name (KindLock, …), the
	// literal name of a non-sequential node, or "" for a child no recipe
	// recognises.
	Kind string
	// Seq orders siblings: the ZooKeeper sequence (wrap-corrected) or the
	// etcd CreateRevision. Only comparisons between siblings are meaningful.
	Seq int64
	// Token is a fencing token, strictly increasing in creation order across
	// the whole store: ZooKeeper czxid, etcd CreateRevision. Zero when the
	// listing that produced the node did not carry it.
	Token int64
	// Owner is the id of the session owning an ephemeral node, "" if the
	// node is persistent or the owner is not known from the listing.
	Owner string
	// Created is when the node was created, if the store records it.
	Created time.Time
	// Version is the version of the node's data as Get read it (or Create
	// made it): ZooKeeper's
	// dataVersion (an int32, which wraps), etcd's ModRevision, the memory
	// store's count of writes. Every write of the data changes it; only
	// equality is meaningful (never order: ZooKeeper's wraps). Listings
	// need not carry it.
	Version int64
	// Dir says the node has or had children (ZooKeeper: a child count or
	// child version not zero): a directory of other nodes, which may be a
	// container the server removes once its last child goes (ZooKeeper
	// does not tell clients which nodes are containers). Barrier.Set
	// refuses such a node. Only Get need report it; etcd and the memory
	// store keep no directory nodes that could vanish, and leave it false.
	Dir bool
}

// OpKind is what an Op does.
type OpKind uint8

// The operations a guarded Commit can carry.
const (
	OpSet    OpKind = iota + 1 // set the data of an existing node
	OpDelete                   // delete a node (that incarnation only)
	OpCreate                   // create a node
)

// Op is one operation of a guarded Commit.
type Op struct {
	Kind  OpKind
	Node  Node   // OpSet, OpDelete: the target
	Dir   string // OpCreate: the parent
	Name  string // OpCreate: kind (sequential) or literal name
	Flags Flags  // OpCreate
	Data  []byte // OpSet, OpCreate
	// IfVersion (OpSet, OpDelete) applies the op only while the node's
	// data version is still Node.Version (as Get read it); otherwise
	// Commit returns an error wrapping ErrConflict and applies nothing.
	// On ZooKeeper a version of -1 (reached after 2^32-1 writes, as the
	// int32 wraps) means "any" to the server, so such an op is refused
	// with ErrConflict rather than sent unconditioned.
	IfVersion bool
}

// Conn is one session's view of a coordination store: the primitives the
// recipes are written against. Backends (zk, etcd, memory) implement it;
// users open one through a backend and wrap it with NewSession.
//
// Every blocking method takes ctx first and returns ctx.Err() (possibly
// wrapped) when it is cancelled. Once the session is gone every method
// returns an error that satisfies IsSessionGone.
type Conn interface {
	// ID is the session's id as the store shows it (hex).
	ID() string
	// TTL is the session timeout in force (as granted by the server).
	TTL() time.Duration
	// Done is closed when the session is over: expired by the server, lost
	// locally (no confirmed contact for TTL minus a margin), or closed.
	Done() <-chan struct{}
	// Err is nil while Done is open, then says why it closed
	// (ErrSessionExpired, ErrSessionLost or ErrClosed, possibly wrapped).
	Err() error
	// Close ends the session, removing its ephemeral nodes.
	Close(ctx context.Context) error

	// Create makes a child of dir, creating missing parents (container
	// nodes where the store has them). With Sequential the backend names
	// the node from kind; otherwise the node is named kind and ErrExists is
	// returned if it is there already. Create is exactly-once: a retry after
	// a connection loss never leaves a second node behind.
	Create(ctx context.Context, dir, kind string, data []byte, f Flags) (Node, error)
	// Children lists the direct children of dir in Seq order (non-sequential
	// nodes after sequential ones, by name). A missing dir is an empty list.
	Children(ctx context.Context, dir string) ([]Node, error)
	// Get reads one node. A missing node is ErrNotFound.
	Get(ctx context.Context, path string) ([]byte, Node, error)
	// Delete removes that incarnation of n (matched by Token where known):
	// never a newer node of the same name. Deleting a missing node is nil.
	Delete(ctx context.Context, n Node) error
	// WaitGone returns nil once that incarnation of n no longer exists. It
	// watches n alone, so a release wakes only the waiter behind it.
	WaitGone(ctx context.Context, n Node) error
	// WaitChildren returns nil as soon as the children of dir differ from
	// since as ChildrenDiffer says; at once if they already do.
	WaitChildren(ctx context.Context, dir string, since []Node) error
	// WaitExists returns the node at path once it exists (at once if it
	// does).
	WaitExists(ctx context.Context, path string) (Node, error)
	// WaitChanged returns nil once the data of that incarnation of n has
	// been written since Get read it at n.Version, and an error wrapping
	// ErrNotFound once n is gone; at once if either is so already. It
	// watches n alone.
	WaitChanged(ctx context.Context, n Node) error
	// Commit applies ops atomically, only while guard (that incarnation)
	// still exists; otherwise it returns ErrGuard and applies nothing. A zero
	// guard applies ops unconditionally, still atomically.
	Commit(ctx context.Context, guard Node, ops ...Op) error
}

// ChildrenDiffer is the one rule by which two listings of a directory
// differ, as WaitChildren uses it: a path is in one and not the other, or a
// path is in both with Tokens that are both known (non-zero) and unequal (a
// node removed and made again under the same name). Order and the other
// fields do not count.
func ChildrenDiffer(a, b []Node) bool {
	if len(a) != len(b) {
		return true
	}
	tokens := make(map[string]int64, len(a))
	for _, n := range a {
		tokens[n.Path] = n.Token
	}
	for _, n := range b {
		t, ok := tokens[n.Path]
		if !ok || (t != 0 && n.Token != 0 && t != n.Token) {
			return true
		}
		delete(tokens, n.Path)
	}
	return len(tokens) != 0
}

// CreateLister is an optional Conn capability: create a sequential node and
// list its siblings (including it) in one round trip. Recipes use it when a
// backend offers it (etcd does, in one Txn).
type CreateLister interface {
	CreateAndList(ctx context.Context, dir, kind string, data []byte, f Flags) (Node, []Node, error)
}

// Relister is an optional Conn capability for a waiter in a line: list
// the children of dir, as Children does, for a session whose own node me
// in dir was created and then listed (by CreateAndList, or by Children
// after Create). The listing is complete and in order up to me, which is
// all a waiter reads; a node created after me may be shown without one
// created between it and me that is not yet visible. A backend offers it
// where that costs less than Children: on PostgreSQL, Children waits for
// the creates in flight in dir (so that no node shows above one not yet
// committed), and Relist does not.
type Relister interface {
	Relist(ctx context.Context, dir string, me Node) ([]Node, error)
}

// AbsolutePaths is an optional Conn capability of a store whose names are
// absolute paths (ZooKeeper's znodes): there a name written without a
// leading "/" names the node at AbsolutePath(name) (CleanName's rule), so
// recipes name their nodes that way, and the Conn takes a path either way.
// On a store without it a name is used as written: "x" and "/x" are two.
type AbsolutePaths interface {
	AbsolutePaths() bool
}

// Join appends elem to dir with one slash between them.
func Join(dir, elem string) string {
	if dir == "" || dir[len(dir)-1] == '/' {
		return dir + elem
	}
	return dir + "/" + elem
}

// WatchCounter is an optional Conn capability used by tests and the bench:
// the number of watch notifications this session has received from the
// store, less those of its own deletes (a holder watching its node is told
// of its own release, which wakes no waiter). A herd-free release raises
// the total over all sessions by one.
type WatchCounter interface {
	WatchEvents() int64
}

// Expirer is an optional capability of sessions (Conn) and of lock handles
// on stores without sessions: Expiry is the moment the session or hold will
// be given up as lost unless contact with the store is confirmed before
// then. It is the loss deadline the backend itself keeps (the last
// confirmed contact plus the TTL minus a safety margin), so it is never
// later than the moment the store could hand a lock on, clock rates
// permitting. It only moves forward; the zero Time means lost already.
// Lease.Deadline reports it for each lease; `baton lock` hands it to a
// watchdog process that warns CMD (SIGTERM) --grace before that moment and
// stops it (SIGKILL) at that moment, even if baton itself is stopped or
// killed.
type Expirer interface {
	Expiry() time.Time
}
