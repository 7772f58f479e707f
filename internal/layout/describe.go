package layout

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// wrapMargin is how close to the signed 32-bit limit a ZooKeeper sequence
// may get before it is flagged.
const wrapMargin = 1 << 20

var (
	uuidName    = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	kazooHex    = regexp.MustCompile(`^[0-9a-f]{32}$`)
	kazooEntry  = regexp.MustCompile(`^entry-\d{3}-\d{10}$`)
	curatorItem = regexp.MustCompile(`^queue-\d{10}$`)
	kazooLockRe = regexp.MustCompile(`__r?lock__-?\d{10}$`)
)

// Warnings on a name; docs/interop.md explains each.
const (
	WarnLeaderSelector = "unsafe: lock- nodes among latch- candidates: Curator's LeaderSelector (an InterProcessMutex) and kazoo's Election order only their own lock nodes, so they lead beside a LeaderLatch or baton Election leader; do not mix them on one name"
	WarnKazooSemaphore = "unsafe: kazoo Semaphore layout (NAME/<hex> leases, NAME-__lock__): baton's Semaphore refuses this name, and kazoo counts the locks and leases directories of baton's and Curator's semaphores as leases held; use one of them per name"
	WarnKazooQueue     = "kazoo Queue items (entry-…): baton's Queue ignores them, and kazoo takes baton's qn- items only after all of its own, so order across producers is lost; use one client's queue per name"
	WarnCuratorQueue   = "Curator DistributedQueue items (queue-…): baton's Queue and ZooKeeper's DistributedQueue (qn- items) ignore them, and Curator's queue ignores theirs; use one client's queue per name"
	WarnKazooLocking   = "kazoo LockingQueue layout (NAME/entries, NAME/taken): baton's queues never see its items, nor it theirs; use one client's queue per name"
	WarnEtcdRWMutex    = "etcd recipes RWMutex layout (NAME/read/…, NAME/write/…): baton's RWMutex keeps its nodes directly under NAME, so neither sees the other; use one of them per name"
	WarnEtcdDouble     = "etcd recipes DoubleBarrier layout (NAME/waiters/…): baton's DoubleBarrier counts participants directly under NAME, so neither counts the other's; use one of them per name"
	WarnEtcdQueue      = "etcd recipes Queue items (NAME/<unix nanos>, persistent): baton's Queue ignores them, while etcd's Queue takes baton's qn- items too, in creation order; use one client's queue per name"
	FlagKazooCurator   = "unsafe unless set up for it: kazoo node under a Curator-layout path. A kazoo Lock made without extra_lock_patterns=[\"-lock-\"] (a WriteLock without \"__READ__\", \"__WRIT__\"; a ReadLock without \"__WRIT__\") ignores Curator's and baton's nodes and holds beside them; the names look the same either way, so check the kazoo client's code"
	WarnDirBarrier     = "maybe not a barrier: the node has had children, so it may be the container directory of a lock or another recipe under it, which ZooKeeper removes once empty (a client cannot tell the two apart; baton barrier set refuses such a name)"
	FlagForeign        = "foreign: no recipe recognises this node; it is ignored"
	FlagRevoke         = "asked to let go: revoke requested (the revoke marker replaced the holder's identity in its node)"
)

// Describe turns a Listing into a Report at time now. It does no I/O.
func Describe(l Listing, now time.Time) Report {
	d := describer{l: l, now: now, rep: Report{Name: l.Name, Recipes: []string{}, Entries: []Entry{}}}
	d.root()
	d.semaphore()
	d.kazooSemaphore()
	d.queues()
	d.etcdRecipes()
	if l.Exists && len(l.Dirs[""]) == 0 && len(d.rep.Entries) == 0 {
		d.rep.BarrierSet = true
		d.recipe(RecipeBarrier)
		if l.Dir {
			d.warn(WarnDirBarrier)
		}
	}
	for i := range d.rep.Entries {
		d.rep.Entries[i].Pos = i + 1
	}
	return d.rep
}

type describer struct {
	l   Listing
	now time.Time
	rep Report
}

func (d *describer) recipe(r string) {
	for _, x := range d.rep.Recipes {
		if x == r {
			return
		}
	}
	d.rep.Recipes = append(d.rep.Recipes, r)
}

func (d *describer) warn(w string) {
	for _, x := range d.rep.Warnings {
		if x == w {
			return
		}
	}
	d.rep.Warnings = append(d.rep.Warnings, w)
}

func (d *describer) add(e Entry) {
	switch e.Role {
	case RoleHolder, RoleLeader:
		d.rep.Holders++
	case RoleWaiter, RoleCandidate:
		d.rep.Waiters++
	}
	if e.Recipe != "" {
		d.recipe(e.Recipe)
	}
	d.rep.Entries = append(d.rep.Entries, e)
}

// kazooSemaphore reports whether the name holds kazoo's Semaphore: its
// admission lock beside the name, or its permits in the name's data with
// its hex-named leases under it.
func (d *describer) isKazooSemaphore() bool {
	if len(d.l.Dirs[DirKazooLock]) > 0 {
		return true
	}
	_, err := strconv.Atoi(string(d.l.Data))
	// kazoo writes its permits into the name's data, unless the name was
	// there already (made by baton's or Curator's semaphore, whose
	// directories then sit beside kazoo's leases).
	root := d.l.Dirs[""]
	if err != nil && !hasChild(root, DirLeases) && !hasChild(root, DirLocks) && len(d.l.Dirs[DirLeases]) == 0 {
		return false
	}
	for _, k := range root {
		if kazooHex.MatchString(k.Name) {
			return true
		}
	}
	return false
}

// root describes the name's own children.
func (d *describer) root() {
	kids := d.l.Dirs[""]
	zk := d.l.Store == StoreZooKeeper
	kazooSem := d.isKazooSemaphore()
	curator := false
	hasLatch, rw, etcdElect := false, false, false
	for _, k := range kids {
		curator = curator || strings.HasPrefix(k.Name, "_c_")
		hasLatch = hasLatch || k.Kind == backend.KindLatch
		rw = rw || k.Kind == backend.KindRead || k.Kind == backend.KindWrite
		if d.l.Store == StoreEtcd && k.Kind == backend.KindLock && k.Owner != "" && len(k.Data) > 0 && !revoked(k) {
			if _, ok := baton.ParseIdentity(k.Data); !ok {
				etcdElect = true // etcdctl elect and v3election write the value
			}
		}
	}
	election := hasLatch || etcdElect
	var exclusiveSeen, anySeen, leaderSeen bool
	for _, k := range kids {
		e := d.entry(k)
		switch {
		case d.itemQueue(k, &e):
			d.unidentified(k, &e)
		case d.l.Store == StoreEtcd && k.Kind == backend.KindLock && k.Owner == "" && isDecimal(k.Name):
			// A persistent key named by a time: an item of etcd's
			// recipe Queue (lock and election keys are leased).
			e.Recipe, e.Role, e.Peer = RecipeEtcdQueue, RoleItem, PeerEtcd
			d.rep.Items++
			d.warn(WarnEtcdQueue)
		case election && (k.Kind == backend.KindLatch || k.Kind == backend.KindLock):
			e.Recipe = RecipeElection
			e.Role = ifElse(leaderSeen, RoleCandidate, RoleLeader)
			leaderSeen = true
			e.Value = printable(k.Data)
			if k.Kind == backend.KindLatch {
				d.unidentified(k, &e) // a peer's lock-kind candidate stays foreign
			}
			if zk && hasLatch && k.Kind == backend.KindLock {
				e.Flags = append(e.Flags, WarnLeaderSelector)
				d.warn(WarnLeaderSelector)
			}
		case k.Kind == backend.KindLock || k.Kind == backend.KindWrite:
			e.Recipe = ifElse(rw, RecipeRWMutex, RecipeMutex)
			e.Role = ifElse(anySeen, RoleWaiter, RoleHolder)
			exclusiveSeen, anySeen = true, true
			if revoked(k) {
				e.Identity, e.RevokeRequested = IdentityUnknown, true
				e.Flags = append(e.Flags, FlagRevoke)
			}
		case k.Kind == backend.KindRead:
			e.Recipe = RecipeRWMutex
			e.Role = ifElse(exclusiveSeen, RoleWaiter, RoleHolder)
			anySeen = true
		case k.Kind == backend.KindLease:
			e.Recipe, e.Role = RecipeSemaphore, RoleHolder
		case k.Kind == backend.KindQueue:
			e.Recipe, e.Role = RecipeQueue, RoleItem
			d.rep.Items++
			d.unidentified(k, &e)
		case zk && curatorItem.MatchString(k.Name):
			e.Recipe, e.Role, e.Peer = RecipeCuratorQueue, RoleItem, PeerCurator
			d.rep.Items++
			d.warn(WarnCuratorQueue)
		case zk && kazooEntry.MatchString(k.Name):
			e.Recipe, e.Role, e.Peer = RecipeKazooQueue, RoleItem, PeerKazoo
			d.rep.Items++
			d.warn(WarnKazooQueue)
		case kazooSem && kazooHex.MatchString(k.Name):
			e.Recipe, e.Role, e.Peer = RecipeKazooSemaphore, RoleHolder, PeerKazoo
		case uuidName.MatchString(k.Name) || zk && kazooHex.MatchString(k.Name):
			e.Recipe, e.Role = RecipeDoubleBarrier, RoleParticipant
			d.rep.Participants++
			if kazooHex.MatchString(k.Name) {
				e.Peer = PeerKazoo
			}
		case k.Name == "ready":
			e.Recipe, e.Role = RecipeDoubleBarrier, RoleReady
			d.rep.Open = true
		case k.Name == DirLocks || k.Name == DirLeases || k.Name == DirClaims:
			continue // described with their contents
		case k.Name == NodePermits && len(k.Data) == 4:
			continue // a semaphore's number of permits (Report.Permits)
		case zk && (k.Name == DirEntries || k.Name == DirTaken):
			d.warn(WarnKazooLocking)
			continue
		case k.Kind == "":
			e.Role = RoleForeign
			e.Flags = append(e.Flags, FlagForeign)
		default:
			e.Role = RoleNode
		}
		if zk && curator && kazooLockRe.MatchString(k.Name) {
			e.Flags = append(e.Flags, FlagKazooCurator)
		}
		d.add(e)
	}
}

// semaphore describes baton's and Curator's semaphore: NAME/leases holds
// the leases, NAME/locks the line for admission.
func (d *describer) semaphore() {
	leases, locks := d.l.Dirs[DirLeases], d.l.Dirs[DirLocks]
	recorded := d.recordedPermits()
	if recorded > 0 {
		d.rep.Permits = recorded
	}
	if len(leases) == 0 && len(locks) == 0 {
		if recorded > 0 || hasChild(d.l.Dirs[""], DirLeases) || hasChild(d.l.Dirs[""], DirLocks) {
			d.recipe(RecipeSemaphore)
		}
		return
	}
	if n, err := strconv.Atoi(string(d.l.Data)); err == nil && n > 0 && recorded == 0 {
		d.rep.Permits = n
	}
	// The first node in locks holds the admission lock: it is taking a
	// lease now or, with its lease node past the permits, waiting for one
	// to be returned. Without the permits known, that client's lease (the
	// last) is taken for a waiting one: an admitted client releases the
	// admission lock at once.
	admitting := ""
	for _, k := range locks {
		if k.Kind == backend.KindLock {
			admitting = k.Owner
			break
		}
	}
	last := -1
	for i, k := range leases {
		if k.Kind == backend.KindLease {
			last = i
		}
	}
	leased := map[string]bool{}
	i := 0
	for j, k := range leases {
		if k.Kind != backend.KindLease {
			continue
		}
		e := d.entry(k)
		e.Recipe, e.Role = RecipeSemaphore, RoleHolder
		switch {
		case d.rep.Permits > 0 && i >= d.rep.Permits:
			e.Role = RoleWaiter // queued past the permits, watching the leases
		case d.rep.Permits == 0 && j == last && admitting != "" && k.Owner == admitting && i > 0:
			e.Role = RoleWaiter
		}
		leased[k.Owner] = true
		i++
		d.add(e)
	}
	first := true
	for _, k := range locks {
		if k.Kind != backend.KindLock {
			continue
		}
		e := d.entry(k)
		e.Recipe, e.Role = RecipeSemaphore, RoleWaiter
		if first {
			e.Role = RoleAcquiring
			if !leased[k.Owner] {
				d.rep.Waiters++ // still creating its lease node
			}
		}
		first = false
		d.add(e)
	}
	d.recipe(RecipeSemaphore)
}

// recordedPermits is the number of permits recorded in NAME/permits
// (NodePermits), or 0.
func (d *describer) recordedPermits() int {
	for _, k := range d.l.Dirs[""] {
		if k.Name == NodePermits && len(k.Data) == 4 {
			return max(int(int32(binary.BigEndian.Uint32(k.Data))), 0)
		}
	}
	return 0
}

// kazooSemaphore describes kazoo's Semaphore's admission line beside the
// name and flags the name.
func (d *describer) kazooSemaphore() {
	if !d.isKazooSemaphore() {
		return
	}
	d.warn(WarnKazooSemaphore)
	d.recipe(RecipeKazooSemaphore)
	if n, err := strconv.Atoi(string(d.l.Data)); err == nil && n > 0 {
		d.rep.Permits = n
	}
	for i, k := range d.l.Dirs[DirKazooLock] {
		e := d.entry(k)
		e.Recipe, e.Peer, e.Role = RecipeKazooSemaphore, PeerKazoo, ifElse(i == 0, RoleAcquiring, RoleWaiter)
		if i == 0 {
			d.rep.Waiters++
		}
		d.add(e)
	}
}

// queues describes the claims of a ReliableQueue and kazoo's
// LockingQueue.
func (d *describer) queues() {
	for _, k := range d.l.Dirs[DirClaims] {
		e := d.entry(k)
		e.Recipe, e.Role = RecipeReliableQueue, RoleClaim
		d.rep.Claimed++
		d.unidentified(k, &e)
		if e.Identity == IdentityUnknown {
			e.Peer = PeerBaton // NAME/claims is baton's ReliableQueue's alone
		}
		d.add(e)
	}
	entries, taken := d.l.Dirs[DirEntries], d.l.Dirs[DirTaken]
	if len(entries)+len(taken) > 0 {
		d.warn(WarnKazooLocking)
	}
	for _, k := range entries {
		e := d.entry(k)
		e.Recipe, e.Role, e.Peer = RecipeKazooLocking, RoleItem, PeerKazoo
		d.rep.Items++
		d.add(e)
	}
	for _, k := range taken {
		e := d.entry(k)
		e.Recipe, e.Role, e.Peer = RecipeKazooLocking, RoleClaim, PeerKazoo
		d.rep.Claimed++
		d.add(e)
	}
}

// etcdRecipes describes the layouts of etcd's experimental recipes that
// keep their nodes one level down, and flags the name.
func (d *describer) etcdRecipes() {
	reads, writes := d.l.Dirs[DirEtcdRead], d.l.Dirs[DirEtcdWrite]
	if len(reads)+len(writes) > 0 {
		d.warn(WarnEtcdRWMutex)
		// Its order is creation order across both directories; a reader
		// holds unless an earlier writer exists, a writer if it is first.
		writer := map[string]bool{}
		for _, k := range writes {
			writer[k.Path] = true
		}
		all := append(append([]Child{}, reads...), writes...)
		slices.SortFunc(all, func(a, b Child) int { return cmp.Compare(a.Token, b.Token) })
		for _, k := range all {
			e := d.entry(k)
			e.Recipe, e.Peer, e.Role = RecipeEtcdRWMutex, PeerEtcd, RoleHolder
			for _, o := range all {
				if o.Token < k.Token && (writer[o.Path] || writer[k.Path]) {
					e.Role = RoleWaiter
				}
			}
			d.add(e)
		}
	}
	if ws := d.l.Dirs[DirEtcdWaiters]; len(ws) > 0 {
		d.warn(WarnEtcdDouble)
		for _, k := range ws {
			e := d.entry(k)
			e.Recipe, e.Peer, e.Role = RecipeEtcdDouble, PeerEtcd, RoleParticipant
			d.rep.Participants++
			d.add(e)
		}
	}
}

// revoked reports whether k's data is the revoke marker: its holder was
// asked to let go.
func revoked(k Child) bool { return bytes.Equal(k.Data, baton.RevokeMarker) }

// unidentified marks e, a node whose layout keeps no identity (an
// election candidate, a queue item, a claim), as IdentityUnknown rather
// than foreign unless baton's identity is there after all, and as
// baton's where only baton names nodes that way.
func (d *describer) unidentified(k Child, e *Entry) {
	if _, ours := baton.ParseIdentity(k.Data); ours {
		return
	}
	e.Identity = IdentityUnknown
	if d.batonsOwn(k) {
		e.Peer = PeerBaton
	}
}

// batonsOwn reports whether k's name is one only baton makes: on etcd an
// election candidate latch-<lease> (etcd's own candidates are the bare
// lease), a queue item qn-<id>, an older priority item pq-<id>, a delay
// item; on the memory store every node (it has no peers).
func (d *describer) batonsOwn(k Child) bool {
	switch d.l.Store {
	case StoreMemory:
		return true
	case StoreEtcd:
		_, _, isDQ := backend.ParseDelayKind(k.Kind)
		return k.Kind == backend.KindLatch || k.Kind == backend.KindQueue || isDQ ||
			strings.HasPrefix(k.Name, backend.KindPriority+"-")
	}
	return false
}

func isDecimal(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// entry fills what a node says about itself: who wrote it, its age, its
// TTL, and flags that do not depend on its recipe.
func (d *describer) entry(k Child) Entry {
	e := Entry{Session: k.Owner, Token: k.Token, Seq: k.Seq, Kind: k.Kind, Node: k.Path,
		Identity: IdentityForeign, Age: -1, TTL: k.TTL, Peer: d.peerOf(k)}
	if k.Seq == math.MaxInt64 {
		e.Seq = 0
	}
	id, ours := baton.ParseIdentity(k.Data)
	if ours {
		e.Peer = PeerBaton
		e.Identity = fmt.Sprintf("%s pid %d", id.Host, id.PID)
		if id.Cmd != "" {
			e.Identity += " " + id.Cmd
		}
		e.Host, e.PID, e.Cmd = id.Host, id.PID, id.Cmd
	}
	switch {
	case !k.Created.IsZero():
		e.Age = d.now.Sub(k.Created)
	case ours && !id.Created.IsZero():
		e.Age = d.now.Sub(id.Created) // the writer's clock: etcd keeps no times
	}
	if e.Age < -1 {
		e.Age = 0
	}
	if e.TTL < 0 && ours && id.TTL > 0 && k.Owner != "" {
		e.TTL, e.TTLBound = id.TTL, true
	}
	if d.l.Store == StoreZooKeeper {
		if f := wrapFlag(k.Name); f != "" {
			e.Flags = append(e.Flags, f)
		}
	}
	return e
}

// peerOf guesses whose layout a node's name is in; baton's own nodes are
// told apart by their identity data.
func (d *describer) peerOf(k Child) string {
	switch d.l.Store {
	case StoreZooKeeper:
		switch {
		case strings.HasPrefix(k.Name, "_c_"), curatorItem.MatchString(k.Name):
			return PeerCurator
		case kazooLockRe.MatchString(k.Name), kazooEntry.MatchString(k.Name):
			return PeerKazoo
		case k.Kind == backend.KindQueue:
			return PeerZK
		}
	case StoreEtcd:
		if k.Kind == backend.KindLock {
			return PeerEtcd
		}
	}
	return PeerUnknown
}

// wrapFlag flags a ZooKeeper sequence (the name's last ten characters,
// printed by the server as %010d of a signed 32-bit counter) at or past
// the wrap.
func wrapFlag(name string) string {
	if len(name) < 10 {
		return ""
	}
	seq, err := strconv.ParseInt(name[len(name)-10:], 10, 64)
	if err != nil {
		return ""
	}
	switch {
	case seq < 0 || seq > math.MaxInt32:
		return "unsafe: sequence wrapped past 2147483647"
	case seq > math.MaxInt32-wrapMargin:
		return fmt.Sprintf("unsafe: sequence %d is near the 32-bit wrap", seq)
	}
	return ""
}

// printable returns data as text if it is short printable UTF-8, else a
// byte count.
func printable(data []byte) string {
	const max = 64
	if len(data) == 0 {
		return ""
	}
	if !utf8.Valid(data) || strings.ContainsFunc(string(data), func(r rune) bool { return r < ' ' }) {
		return fmt.Sprintf("(%d bytes)", len(data))
	}
	if len(data) > max {
		return string(data[:max]) + "…"
	}
	return string(data)
}

func ifElse(c bool, a, b string) string {
	if c {
		return a
	}
	return b
}
