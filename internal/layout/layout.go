// Package layout is baton's one reader of recipe layouts: it turns what a
// store holds under a name into recipes, roles, identities and warnings,
// for baton's own nodes and for every peer's that shares the path
// (Apache Curator, kazoo, go-zookeeper, etcd's concurrency package and
// etcdctl). `baton status` prints its Report; a dashboard or metrics read
// the same Report.
//
// Read gathers a Listing from a store (a few requests); Describe turns a
// Listing into a Report and does no I/O, so it can be tested and reused on
// a Listing gathered elsewhere.
package layout

import "time"

// Roles an Entry can have.
const (
	RoleHolder      = "holder"      // holds a lock, a read/write side or a semaphore lease
	RoleWaiter      = "waiter"      // queued for a lock or a lease
	RoleAcquiring   = "acquiring"   // holds a semaphore's admission lock: getting a lease now
	RoleLeader      = "leader"      // leads an election
	RoleCandidate   = "candidate"   // queued in an election
	RoleItem        = "item"        // a queue item
	RoleClaim       = "claim"       // a reliable queue's claim on an item (in flight)
	RoleParticipant = "participant" // inside a double barrier
	RoleReady       = "ready"       // a double barrier's "ready" node (it is open)
	RoleNode        = "node"        // a plain node no recipe gives a role
	RoleForeign     = "foreign"     // a node no recipe recognises; ignored by baton
)

// Identities an Entry can have when its node carries no identity written
// by baton ("host pid N cmd").
const (
	// IdentityForeign is a node without baton's identity where baton
	// writes one (a lock, lease or participant node): a peer's node.
	IdentityForeign = "foreign"
	// IdentityUnknown is a node whose layout keeps no identity: an
	// election candidate's data is its value, a queue item's its payload,
	// a claim's nothing, and a holder asked to let go has the revoke
	// marker in place of its identity. Baton's own nodes of these kinds
	// are unknown too; Peer says whose layout it is.
	IdentityUnknown = "unknown"
)

// Recipes a Report can name.
const (
	RecipeMutex          = "mutex"
	RecipeRWMutex        = "rwmutex"
	RecipeSemaphore      = "semaphore"
	RecipeElection       = "election"
	RecipeBarrier        = "barrier"
	RecipeDoubleBarrier  = "double-barrier"
	RecipeQueue          = "queue"
	RecipeReliableQueue  = "reliable-queue"
	RecipePriorityQueue  = "priority-queue"
	RecipeDelayQueue     = "delay-queue"
	RecipeKazooSemaphore = "kazoo-semaphore"
	RecipeKazooQueue     = "kazoo-queue"
	RecipeCuratorQueue   = "curator-queue"
	RecipeKazooLocking   = "kazoo-locking-queue"
	RecipeEtcdRWMutex    = "etcd-recipes-rwmutex"
	RecipeEtcdDouble     = "etcd-recipes-double-barrier"
	RecipeEtcdQueue      = "etcd-recipes-queue"
)

// Peers an Entry can come from.
const (
	PeerBaton   = "baton"
	PeerCurator = "curator"   // Curator's layout: Curator, or go-zookeeper's Lock
	PeerKazoo   = "kazoo"     // kazoo's layout
	PeerEtcd    = "etcd"      // etcd's concurrency package, etcdctl, the v3lock/v3election services
	PeerZK      = "zookeeper" // ZooKeeper's own recipes (queue items)
	PeerUnknown = ""          // not known
)

// Report is what a name holds, as the recipes on it understand it.
type Report struct {
	// Name is the recipe's name (a ZooKeeper path, an etcd prefix).
	Name string `json:"name"`
	// Recipes lists the recipes whose nodes are on the name, in the
	// order their nodes first appear.
	Recipes []string `json:"recipes"`
	// Holders counts holders, leaders and semaphore leases held.
	Holders int `json:"holders"`
	// Waiters counts waiters and candidates.
	Waiters int `json:"waiters"`
	// Permits is a semaphore's number of leases when the store records it
	// (baton in NAME/permits, kazoo in the semaphore's node), else 0.
	Permits int `json:"permits,omitempty"`
	// Items counts queue items; Claimed those a consumer has in flight.
	Items   int `json:"items,omitempty"`
	Claimed int `json:"claimed,omitempty"`
	// Participants counts a double barrier's participants; Open says its
	// "ready" node is there.
	Participants int  `json:"participants,omitempty"`
	Open         bool `json:"open,omitempty"`
	// BarrierSet says the name itself exists with nothing under it: a set
	// Barrier.
	BarrierSet bool `json:"barrier_set,omitempty"`
	// Entries are the nodes, in order within each directory.
	Entries []Entry `json:"nodes"`
	// Warnings are about the name as a whole: peers whose layouts do not
	// mix with baton's on this name.
	Warnings []string `json:"warnings,omitempty"`
}

// Held reports whether anyone holds the name: a lock holder, a leader or
// a semaphore lease.
func (r Report) Held() bool { return r.Holders > 0 }

// Entry is one node under the name.
type Entry struct {
	// Pos is the 1-based position among all entries.
	Pos int `json:"pos"`
	// Recipe is the recipe the node belongs to, Role its role there.
	Recipe string `json:"recipe,omitempty"`
	Role   string `json:"role"`
	// Peer is whose node it is, by its name and data.
	Peer string `json:"peer,omitempty"`
	// Identity is who wrote it: "host pid cmd" from baton's identity,
	// else IdentityForeign or IdentityUnknown.
	Identity string `json:"identity"`
	Host     string `json:"host,omitempty"`
	PID      int    `json:"pid,omitempty"`
	Cmd      string `json:"cmd,omitempty"`
	// Value is an election candidate's value, or a queue item's first
	// bytes.
	Value string `json:"value,omitempty"`
	// Priority is a PriorityQueue item's priority (lower first); Due is
	// when a DelayQueue item is due, by the putter's clock.
	Priority *int32     `json:"priority,omitempty"`
	Due      *time.Time `json:"due,omitempty"`
	// Session is the owning session (ZooKeeper session id, etcd lease id
	// in hex), "" for a persistent node.
	Session string `json:"session,omitempty"`
	Token   int64  `json:"token"`
	Seq     int64  `json:"seq"`
	Kind    string `json:"kind"`
	Node    string `json:"node"`
	// Age is how long the node has existed (the store's clock where it
	// records creation, else the writer's), -1 when unknown.
	Age time.Duration `json:"age_ns"`
	// TTL is how long the node outlives its owner's silence: the time left
	// on an etcd lease, or (TTLBound) a ZooKeeper session's timeout, an
	// upper bound; -1 when unknown or the node is persistent.
	TTL      time.Duration `json:"ttl_ns"`
	TTLBound bool          `json:"ttl_bound,omitempty"`
	// RevokeRequested says the holder was asked to let go (its node holds
	// baton.RevokeMarker, written by `baton revoke` or Curator's Revoker).
	RevokeRequested bool `json:"revoke_requested,omitempty"`
	// Flags say what looks foreign or unsafe about this node.
	Flags []string `json:"flags,omitempty"`
}
