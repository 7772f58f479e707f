package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/batonhq/baton/internal/layout"
)

// TestStatusPriorityDelayQueue: PriorityQueue and DelayQueue items (in
// Curator's layouts on ZooKeeper; etcd's recipe layout NAME/<p>/<seq>, an
// older baton's pq- items and dq- items on etcd) are queue items with
// their priority and due time, counted apart from the FIFO queue's, in
// --json and in text; none is a foreign node.
func TestStatusPriorityDelayQueue(t *testing.T) {
	t.Parallel()
	eachStore(t, true, func(t *testing.T, st testStore, e []string) {
		name := "/st-pq-" + st.name
		put := func(args ...string) {
			t.Helper()
			if _, stderr, code := run(t, e, append([]string{"queue", "put"}, args...)...); code != 0 {
				t.Fatalf("queue put %v: exit %d %q", args, code, stderr)
			}
		}
		put("--priority", "3", name, "three")
		put("--priority", "1", name, "one")
		before := time.Now()
		put("--delay", "1h", name, "later")
		after := time.Now()
		put(name, "fifo")
		pqPeer, dqPeer := layout.PeerCurator, layout.PeerCurator
		priorities := map[int32]string{3: pqPeer, 1: pqPeer}
		wantItems := 4
		if st.name == "postgres" {
			// No peers share the tables: every node is baton's.
			pqPeer, dqPeer = layout.PeerBaton, layout.PeerBaton
			priorities = map[int32]string{3: pqPeer, 1: pqPeer}
		}
		if st.name == "etcd" {
			// Delay items and the older pq- items are named as only baton
			// names them on etcd.
			pqPeer, dqPeer = layout.PeerEtcd, layout.PeerBaton
			priorities = map[int32]string{3: pqPeer, 1: pqPeer, 5: layout.PeerBaton}
			wantItems = 5
			// An item of a baton from before etcd's layout.
			addr := strings.TrimPrefix(strings.TrimPrefix(e[len(e)-1], "BATON_STORE="), "etcd://")
			cli, err := clientv3.New(clientv3.Config{Endpoints: []string{addr}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
			if err != nil {
				t.Fatal(err)
			}
			defer cli.Close()
			if _, err := cli.Put(context.Background(), name+"/pq-5-"+strings.Repeat("ab", 16), "old"); err != nil {
				t.Fatal(err)
			}
		}
		rep := pollStatus(t, e, name, func(r statusReport) bool { return r.Items == wantItems })
		for _, rc := range []string{layout.RecipePriorityQueue, layout.RecipeDelayQueue, layout.RecipeQueue} {
			if !slices.Contains(rep.Recipes, rc) {
				t.Errorf("recipes %v lack %s", rep.Recipes, rc)
			}
		}
		dq := 0
		for _, n := range rep.Entries {
			if n.Role != layout.RoleItem || n.Identity != layout.IdentityUnknown {
				t.Errorf("not an item of an unknown writer: %+v", n)
			}
			switch n.Recipe {
			case layout.RecipePriorityQueue:
				if n.Priority == nil {
					t.Errorf("priority item without its priority: %+v", n)
					continue
				}
				if peer, ok := priorities[*n.Priority]; !ok || n.Peer != peer {
					t.Errorf("priority item %+v", n)
				}
				delete(priorities, *n.Priority)
			case layout.RecipeDelayQueue:
				dq++
				lo, hi := before.Add(time.Hour).Truncate(time.Millisecond), after.Add(time.Hour)
				if n.Due == nil || n.Due.Before(lo) || n.Due.After(hi) || n.Peer != dqPeer {
					t.Errorf("delay item %+v, want due between %v and %v", n, lo, hi)
				}
			case layout.RecipeQueue:
			default:
				t.Errorf("entry %+v", n)
			}
		}
		if len(priorities) != 0 || dq != 1 {
			t.Errorf("priority items %v and %d delay items not shown: %+v", priorities, dq, rep.Entries)
		}
		out, _, code := run(t, e, "status", name)
		want := []string{"priority-queue (2 items), delay-queue (1 items), queue (1 items)", " priority=3 ", " priority=1 ", " due=", " (in "}
		if st.name == "etcd" {
			want[0] = "priority-queue (3 items), delay-queue (1 items), queue (1 items)"
		}
		for _, w := range want {
			if code != 0 || !strings.Contains(out, w) {
				t.Errorf("text status (exit %d) lacks %q:\n%s", code, w, out)
			}
		}
	})
}
