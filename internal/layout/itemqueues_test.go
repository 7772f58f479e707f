package layout

import (
	"testing"
	"time"

	"github.com/batonhq/baton/backend"
)

// TestDescribeItemQueues: PriorityQueue and DelayQueue items, as the
// backends list them (kinds pq:<p> and dq:<delay>:<due>), are items of
// their queues with priority and due time, whose layout's peer is named:
// Curator's on ZooKeeper, etcd's recipe layout on etcd (an older baton's
// pq- items and delay items are baton's own there). An item's data is its
// payload, so its writer is unknown, never foreign.
func TestDescribeItemQueues(t *testing.T) {
	due := now.Add(time.Minute)
	dq := backend.DelayKind(time.Minute, due)
	for _, c := range []struct {
		store            string
		pq, oldPQ, delay Child
		peer, oldPeer    string
		delayPeer        string
	}{
		{StoreZooKeeper,
			child("/q", "queue-1000000030000000000", backend.PriorityKind(3), "a"),
			child("/q", "queue-0FFFFFFFF0000000001", backend.PriorityKind(-1), "b"),
			child("/q", "queue-EA60|18BCFE56C60|0000000002", dq, "c"),
			PeerCurator, PeerCurator, PeerCurator},
		{StoreEtcd,
			child("/q", "3.0", backend.PriorityKind(3), "a"),
			child("/q", "pq--1-"+"0123456789abcdef0123456789abcdef", backend.PriorityKind(-1), "b"),
			child("/q", "dq-60000-1700000060000-0123456789abcdef0123456789abcdef", dq, "c"),
			PeerEtcd, PeerBaton, PeerBaton},
	} {
		l := Listing{Name: "/q", Store: c.store, Dirs: map[string][]Child{"": {c.pq, c.oldPQ, c.delay,
			child("/q", "qn-0000000003", backend.KindQueue, "d")}}}
		r := Describe(l, now)
		if roles(r) != "item,item,item,item" || r.Items != 4 || len(r.Recipes) != 3 ||
			r.Recipes[0] != RecipePriorityQueue || r.Recipes[1] != RecipeDelayQueue || r.Recipes[2] != RecipeQueue {
			t.Fatalf("%s: roles %s, %d items, recipes %v", c.store, roles(r), r.Items, r.Recipes)
		}
		for i, want := range []struct {
			prio int32
			peer string
		}{{3, c.peer}, {-1, c.oldPeer}} {
			if e := r.Entries[i]; e.Priority == nil || *e.Priority != want.prio || e.Due != nil || e.Peer != want.peer {
				t.Errorf("%s: priority item %+v, want priority %d, peer %q", c.store, e, want.prio, want.peer)
			}
		}
		for _, e := range r.Entries {
			if e.Identity != IdentityUnknown {
				t.Errorf("%s: item %s has identity %q, want %q", c.store, e.Node, e.Identity, IdentityUnknown)
			}
		}
		if e := r.Entries[2]; e.Due == nil || !e.Due.Equal(due) || e.Priority != nil || e.Peer != c.delayPeer || len(e.Flags) != 0 {
			t.Errorf("%s: delay item %+v, want due %v, peer %q", c.store, e, due, c.delayPeer)
		}
	}
}
