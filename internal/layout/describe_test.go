package layout

import (
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

var now = time.Unix(1700000000, 0)

// child builds a listed node as a backend reports it.
func child(dir, name, kind string, data string) Child {
	return Child{Node: backend.Node{Path: backend.Join(dir, name), Name: name, Kind: kind, Owner: "s-" + name, Token: int64(len(name))}, Data: []byte(data), TTL: -1}
}

func ident(host string, pid int) string {
	return string(baton.Identity{Host: host, PID: pid, Cmd: "baton", TTL: 10 * time.Second, Created: now.Add(-3 * time.Second)}.Bytes())
}

func roles(r Report) string {
	var s []string
	for _, e := range r.Entries {
		s = append(s, e.Role)
	}
	return strings.Join(s, ",")
}

func hasWarning(r Report, w string) bool {
	for _, x := range r.Warnings {
		if x == w {
			return true
		}
	}
	return false
}

func TestDescribeMutexIdentity(t *testing.T) {
	l := Listing{Name: "/l", Store: StoreZooKeeper, Dirs: map[string][]Child{"": {
		child("/l", "_c_a-lock-0000000001", backend.KindLock, ident("h1", 11)),
		child("/l", "_c_b-lock-0000000002", backend.KindLock, "10.0.0.7"),
		child("/l", "junk", "", ""),
	}}}
	l.Dirs[""][1].Created = now.Add(-2 * time.Second)
	r := Describe(l, now)
	if roles(r) != "holder,waiter,foreign" || r.Holders != 1 || r.Waiters != 1 || !r.Held() {
		t.Fatalf("roles %s, %d holding, %d waiting", roles(r), r.Holders, r.Waiters)
	}
	h, w := r.Entries[0], r.Entries[1]
	if h.Identity != "h1 pid 11 baton" || h.Peer != PeerBaton || h.Age != 3*time.Second || h.TTL != 10*time.Second || !h.TTLBound {
		t.Errorf("holder %+v", h)
	}
	if w.Identity != "foreign" || w.Peer != PeerCurator || w.Age != 2*time.Second || w.TTL != -1 {
		t.Errorf("waiter %+v", w)
	}
	if f := r.Entries[2].Flags; len(f) != 1 || f[0] != FlagForeign {
		t.Errorf("foreign flags %q", f)
	}
}

// A kazoo writer ("__lock__") queued behind a baton reader waits; readers
// behind it wait too.
func TestDescribeRWMutexKazooWriter(t *testing.T) {
	l := Listing{Name: "/rw", Store: StoreZooKeeper, Dirs: map[string][]Child{"": {
		child("/rw", "_c_a-__READ__0000000001", backend.KindRead, ident("h", 1)),
		child("/rw", "_c_b-__READ__0000000002", backend.KindRead, ident("h", 2)),
		child("/rw", "0123abcd__lock__0000000003", backend.KindLock, "kazoo-writer"),
		child("/rw", "_c_c-__READ__0000000004", backend.KindRead, ident("h", 3)),
	}}}
	r := Describe(l, now)
	if roles(r) != "holder,holder,waiter,waiter" || r.Holders != 2 || r.Waiters != 2 {
		t.Fatalf("roles %s", roles(r))
	}
	if r.Recipes[0] != RecipeRWMutex || r.Entries[2].Peer != PeerKazoo {
		t.Errorf("recipes %v, peer %q", r.Recipes, r.Entries[2].Peer)
	}
	if !strings.Contains(strings.Join(r.Entries[2].Flags, ";"), "cannot tell") && !strings.Contains(strings.Join(r.Entries[2].Flags, ";"), "check the kazoo client's code") {
		t.Errorf("kazoo writer not flagged: %q", r.Entries[2].Flags)
	}
}

// An etcdctl elect candidate (a bare lease key with its value) queued
// behind baton's leader is a candidate.
func TestDescribeEtcdElection(t *testing.T) {
	l := Listing{Name: "e", Store: StoreEtcd, Dirs: map[string][]Child{"": {
		child("e", "latch-694d8a7c3b1e0f02", backend.KindLatch, "baton-leader"),
		child("e", "694d8a7c3b1e0f09", backend.KindLock, "ctl-candidate"),
	}}}
	l.Dirs[""][1].TTL = 7 * time.Second
	r := Describe(l, now)
	if roles(r) != "leader,candidate" || r.Holders != 1 || r.Waiters != 1 || len(r.Warnings) != 0 {
		t.Fatalf("roles %s %+v", roles(r), r)
	}
	if c := r.Entries[1]; c.Value != "ctl-candidate" || c.Peer != PeerEtcd || c.TTL != 7*time.Second || c.TTLBound {
		t.Errorf("candidate %+v", c)
	}
	// Bare keys alone with baton's identity are a mutex.
	l.Dirs[""] = []Child{child("e", "694d8a7c3b1e0f02", backend.KindLock, ident("h", 1)), child("e", "694d8a7c3b1e0f03", backend.KindLock, "")}
	if r := Describe(l, now); roles(r) != "holder,waiter" || r.Recipes[0] != RecipeMutex {
		t.Errorf("etcd mutex: %s %v", roles(r), r.Recipes)
	}
}

// A Curator LeaderSelector (lock-) among latch- candidates is flagged.
func TestDescribeLeaderSelectorMix(t *testing.T) {
	l := Listing{Name: "/e", Store: StoreZooKeeper, Dirs: map[string][]Child{"": {
		child("/e", "_c_a-latch-0000000001", backend.KindLatch, "v1"),
		child("/e", "_c_b-lock-0000000002", backend.KindLock, "10.0.0.1"),
	}}}
	r := Describe(l, now)
	if roles(r) != "leader,candidate" || !hasWarning(r, WarnLeaderSelector) || len(r.Entries[1].Flags) == 0 {
		t.Fatalf("roles %s, warnings %q", roles(r), r.Warnings)
	}
}

func TestDescribeSemaphore(t *testing.T) {
	l := Listing{Name: "/s", Store: StoreZooKeeper, Data: []byte("2"), Exists: true, Dirs: map[string][]Child{
		"": {child("/s", "leases", "leases", ""), child("/s", "locks", "locks", "")},
		DirLeases: {
			child("/s/leases", "_c_a-lease-0000000001", backend.KindLease, ident("h", 1)),
			child("/s/leases", "_c_b-lease-0000000002", backend.KindLease, ident("h", 2)),
			child("/s/leases", "_c_c-lease-0000000003", backend.KindLease, ident("h", 3)),
		},
		DirLocks: {
			child("/s/locks", "_c_c-lock-0000000001", backend.KindLock, ident("h", 3)),
			child("/s/locks", "_c_d-lock-0000000002", backend.KindLock, ident("h", 4)),
		},
	}}
	l.Dirs[DirLocks][0].Owner = l.Dirs[DirLeases][2].Owner // one client: its lease waits
	r := Describe(l, now)
	if roles(r) != "holder,holder,waiter,acquiring,waiter" || r.Holders != 2 || r.Waiters != 2 || r.Permits != 2 {
		t.Fatalf("roles %s, %d holding, %d waiting, %d permits", roles(r), r.Holders, r.Waiters, r.Permits)
	}
	if len(r.Recipes) != 1 || r.Recipes[0] != RecipeSemaphore {
		t.Errorf("recipes %v", r.Recipes)
	}
	// baton records the permits in NAME/permits (SharedCount's 4 bytes),
	// not an entry of its own; it says the name is a semaphore even with
	// no lease left.
	l.Data = nil
	l.Dirs[""] = append(l.Dirs[""], child("/s", NodePermits, NodePermits, "\x00\x00\x00\x02"))
	if r := Describe(l, now); roles(r) != "holder,holder,waiter,acquiring,waiter" || r.Permits != 2 {
		t.Errorf("with NAME/permits: %s, %d permits", roles(r), r.Permits)
	}
	empty := Listing{Name: "/s", Store: StoreEtcd, Dirs: map[string][]Child{"": {child("/s", NodePermits, "", "\x00\x00\x00\x03")}}}
	if r := Describe(empty, now); len(r.Entries) != 0 || r.Permits != 3 || len(r.Recipes) != 1 || r.Recipes[0] != RecipeSemaphore {
		t.Errorf("a semaphore with no lease: %+v", r)
	}
	// On etcd the directories are not listed as children. Without the
	// permits known, the admitting client's last lease is the waiting one.
	delete(l.Dirs, "")
	l.Store = StoreEtcd
	if r := Describe(l, now); roles(r) != "holder,holder,waiter,acquiring,waiter" || r.Holders != 2 || r.Waiters != 2 {
		t.Errorf("etcd: %s, %d holding, %d waiting", roles(r), r.Holders, r.Waiters)
	}
}

func TestDescribeKazooSemaphore(t *testing.T) {
	l := Listing{Name: "/s", Store: StoreZooKeeper, Exists: true, Data: []byte("2"), Dirs: map[string][]Child{
		"": {
			child("/s", "0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef", "kazoo-lease"),
			child("/s", "leases", "leases", ""),
		},
		DirKazooLock: {child("/s-__lock__", "ab__lock__0000000001", backend.KindLock, "")},
	}}
	r := Describe(l, now)
	if !hasWarning(r, WarnKazooSemaphore) || r.Entries[0].Role != RoleHolder || r.Entries[0].Peer != PeerKazoo {
		t.Fatalf("kazoo semaphore: %+v", r)
	}
	// kazoo's lease beside baton's semaphore, on a name kazoo did not
	// make (no permits in its data, its admission lock released).
	l.Data = nil
	delete(l.Dirs, DirKazooLock)
	if r := Describe(l, now); !hasWarning(r, WarnKazooSemaphore) || r.Entries[0].Recipe != RecipeKazooSemaphore {
		t.Fatalf("kazoo lease beside baton's semaphore: %+v", r)
	}
}

func TestDescribeQueues(t *testing.T) {
	l := Listing{Name: "/q", Store: StoreZooKeeper, Dirs: map[string][]Child{
		"": {
			child("/q", "qn-0000000001", backend.KindQueue, "a"),
			child("/q", "entry-100-0000000002", "", "b"),
			child("/q", "claims", "claims", ""),
		},
		DirClaims: {child("/q/claims", "qn-0000000001", "qn-0000000001", ident("h", 1))},
	}}
	r := Describe(l, now)
	if roles(r) != "item,item,claim" || r.Items != 2 || r.Claimed != 1 || !hasWarning(r, WarnKazooQueue) {
		t.Fatalf("roles %s %+v", roles(r), r)
	}
	l.Dirs = map[string][]Child{
		"":         {child("/q", "entries", "entries", ""), child("/q", "taken", "taken", "")},
		DirEntries: {child("/q/entries", "entry-100-0000000000", "", "x")},
	}
	if r := Describe(l, now); !hasWarning(r, WarnKazooLocking) || r.Items != 1 {
		t.Fatalf("locking queue %+v", r)
	}
}

func TestDescribeBarriers(t *testing.T) {
	l := Listing{Name: "/b", Store: StoreZooKeeper, Exists: true, Dirs: map[string][]Child{"": nil}}
	if r := Describe(l, now); !r.BarrierSet || r.Recipes[0] != RecipeBarrier || r.Held() || len(r.Warnings) != 0 {
		t.Fatalf("barrier %+v", r)
	}
	// A node that had children (a lock's container after the lock, which
	// ZooKeeper removes once empty) may be no barrier: status says so.
	dir := l
	dir.Dir = true
	if r := Describe(dir, now); !r.BarrierSet || !hasWarning(r, WarnDirBarrier) {
		t.Fatalf("barrier that had children %+v", r)
	}
	l.Dirs[""] = []Child{
		child("/b", "2b4c5e4b-0f3e-4d9b-bc39-1234567890ab", "2b4c5e4b-0f3e-4d9b-bc39-1234567890ab", ident("h", 1)),
		child("/b", "0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef", ""),
		child("/b", "ready", "ready", ""),
	}
	r := Describe(l, now)
	if roles(r) != "participant,participant,ready" || r.Participants != 2 || !r.Open || r.BarrierSet {
		t.Fatalf("double barrier %s %+v", roles(r), r)
	}
}

func TestWrapFlag(t *testing.T) {
	for name, want := range map[string]string{
		"_c_x-lock-0000000001":    "",
		"_c_x-lock-2147483000":    "near",
		"ab12__lock__-2147483648": "wrapped",
		"_c_x-lock--000000005":    "wrapped",
		"694d8a7c3b1e0f02":        "",
		"qn-":                     "",
		"_c_2b4c5e4b-0f3e-4d9b-bc39-lock-0000000042": "",
	} {
		got := wrapFlag(name)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("wrapFlag(%q) = %q, want containing %q", name, got, want)
		}
	}
}

// Baton's election candidates and queue items keep no identity in their
// data (a value, a payload): they are unknown, not foreign, with the age
// the store records, and baton's where only baton names nodes so. A
// peer's node where baton writes its identity stays foreign.
func TestDescribeUnidentifiedNodes(t *testing.T) {
	for _, c := range []struct {
		store        string
		kids         []Child
		peers        []string
		wantIdentity []string
	}{
		{StoreEtcd, []Child{
			child("/e", "latch-694d8a7c3b1e0f02", backend.KindLatch, "vm/11375"),
			child("/e", "latch-694d8a7c3b1e0f05", backend.KindLatch, ""),
			child("/e", "694d8a7c3b1e0f09", backend.KindLock, "ctl-candidate"),
		}, []string{PeerBaton, PeerBaton, PeerEtcd}, []string{IdentityUnknown, IdentityUnknown, IdentityForeign}},
		{StoreZooKeeper, []Child{
			child("/e", "_c_a-latch-0000000001", backend.KindLatch, "first"),
			child("/e", "_c_b-latch-0000000002", backend.KindLatch, ""),
		}, []string{PeerCurator, PeerCurator}, []string{IdentityUnknown, IdentityUnknown}},
		{StoreMemory, []Child{
			child("/e", "latch-1", backend.KindLatch, "first"),
		}, []string{PeerBaton}, []string{IdentityUnknown}},
	} {
		for i := range c.kids {
			c.kids[i].Created = now.Add(-time.Duration(i+1) * time.Second)
		}
		r := Describe(Listing{Name: "/e", Store: c.store, Dirs: map[string][]Child{"": c.kids}}, now)
		for i, e := range r.Entries {
			if e.Recipe != RecipeElection || e.Identity != c.wantIdentity[i] || e.Peer != c.peers[i] || e.Age != time.Duration(i+1)*time.Second {
				t.Errorf("%s: candidate %d: %+v, want identity %q, peer %q, age %v", c.store, i, e, c.wantIdentity[i], c.peers[i], time.Duration(i+1)*time.Second)
			}
		}
	}
	for _, c := range []struct {
		store, item string
		peer        string
	}{
		{StoreEtcd, "qn-01a21e01a278705ea12f59ec378ab551", PeerBaton},
		{StoreZooKeeper, "qn-0000000001", PeerZK},
		{StoreMemory, "qn-0000000001", PeerBaton},
	} {
		item := child("/q", c.item, backend.KindQueue, "payload")
		item.Owner, item.Created = "", now.Add(-2*time.Second)
		claim := child("/q/claims", c.item, backend.KindQueue, "")
		claim.Created = now.Add(-time.Second)
		r := Describe(Listing{Name: "/q", Store: c.store, Dirs: map[string][]Child{"": {item}, DirClaims: {claim}}}, now)
		if len(r.Entries) != 2 {
			t.Fatalf("%s: %+v", c.store, r.Entries)
		}
		if e := r.Entries[0]; e.Role != RoleItem || e.Identity != IdentityUnknown || e.Peer != c.peer || e.Age != 2*time.Second {
			t.Errorf("%s: item %+v, want unknown, peer %q, age 2s", c.store, e, c.peer)
		}
		if e := r.Entries[1]; e.Role != RoleClaim || e.Identity != IdentityUnknown || e.Peer != PeerBaton || e.Age != time.Second {
			t.Errorf("%s: claim %+v, want unknown, baton's, age 1s", c.store, e)
		}
	}
	// A queue item carrying baton's identity as its payload is shown as it.
	item := child("/q", "qn-0000000001", backend.KindQueue, ident("h", 7))
	if e := Describe(Listing{Name: "/q", Store: StoreZooKeeper, Dirs: map[string][]Child{"": {item}}}, now).Entries[0]; e.Identity != "h pid 7 baton" {
		t.Errorf("item with an identity: %+v", e)
	}
}

// A holder whose node holds the revoke marker (baton revoke, Curator's
// Revoker) is a mutex holder asked to let go, not an etcd election leader
// or a foreign node.
func TestDescribeRevokedHolder(t *testing.T) {
	for _, c := range []struct {
		store  string
		holder Child
		waiter Child
		peer   string
	}{
		{StoreEtcd, child("/r", "694d8a7c3b1e0f02", backend.KindLock, string(baton.RevokeMarker)),
			child("/r", "694d8a7c3b1e0f05", backend.KindLock, ident("h", 2)), PeerEtcd},
		{StoreZooKeeper, child("/r", "_c_a-lock-0000000001", backend.KindLock, string(baton.RevokeMarker)),
			child("/r", "_c_b-lock-0000000002", backend.KindLock, ident("h", 2)), PeerCurator},
	} {
		r := Describe(Listing{Name: "/r", Store: c.store, Dirs: map[string][]Child{"": {c.holder, c.waiter}}}, now)
		if roles(r) != "holder,waiter" || len(r.Recipes) != 1 || r.Recipes[0] != RecipeMutex || r.Holders != 1 {
			t.Fatalf("%s: roles %s, recipes %v", c.store, roles(r), r.Recipes)
		}
		h := r.Entries[0]
		if !h.RevokeRequested || h.Identity != IdentityUnknown || h.Value != "" || h.Peer != c.peer ||
			len(h.Flags) != 1 || h.Flags[0] != FlagRevoke {
			t.Errorf("%s: revoked holder %+v", c.store, h)
		}
		if w := r.Entries[1]; w.RevokeRequested || w.Identity != "h pid 2 baton" {
			t.Errorf("%s: waiter %+v", c.store, w)
		}
	}
}
