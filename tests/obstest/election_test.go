package obstest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/await"
)

// TestTelemetryElection runs three candidates, each with providers of its
// own (three processes): baton.leader sums to 1 across them, before and
// after the leader's node is deleted by an operator, which ends its
// leadership as revoked (baton.lost reason node_deleted, a baton.lost span
// event) and makes the next candidate leader.
func TestTelemetryElection(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		ctx := ctxT(t)
		name := path("elect")
		mine := attrs{"backend": st.name, "recipe": "election", "name": labelOf("elect")}
		rigs := make([]*rig, 3)
		els := make([]*baton.Election, 3)
		errc := make(chan error, 3)
		for i := range rigs {
			rigs[i] = newRig(t)
			els[i] = baton.NewElection(st.open(t, rigs[i].tel), name)
		}
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		for _, e := range els {
			go func() { errc <- e.Campaign(cctx, []byte("v")) }()
		}
		leaders := func() (sum float64, series int) {
			for _, r := range rigs {
				if v, ok := value(r.collect(t), "baton.leader", mine); ok {
					sum += v
					series++
				}
			}
			return sum, series
		}
		await.Until(t, 10*time.Second, "one leader among three candidates", func() bool {
			sum, n := leaders()
			return sum == 1 && n == 3
		})
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		first := -1
		for i, e := range els {
			if e.Lease() != nil {
				first = i
			}
		}
		l := els[first].Lease()
		node, ok := els[first].Node()
		if !ok {
			t.Fatal("the leader has no node")
		}
		st.deleteNode(t, node)
		select {
		case <-l.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("leadership not ended after its node was deleted")
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		await.Until(t, 10*time.Second, "the next leader", func() bool {
			sum, _ := leaders()
			v, _ := value(rigs[first].collect(t), "baton.leader", mine)
			return sum == 1 && v == 0
		})
		await.Until(t, 5*time.Second, "the revoked hold span", func() bool { return len(rigs[first].spansNamed("baton.hold")) == 1 })
		rm := rigs[first].collect(t)
		if v, _ := value(rm, "baton.lost", with(mine, "reason", "node_deleted")); v != 1 {
			t.Errorf("baton.lost{reason=node_deleted} = %v, want 1", v)
		}
		if n, _ := histCount(rm, "baton.hold.duration", with(mine, "end", "revoked")); n != 1 {
			t.Errorf("baton.hold.duration{end=revoked} count = %d, want 1", n)
		}
		h := rigs[first].spansNamed("baton.hold")[0]
		if len(h.Events) != 1 || h.Events[0].Name != "baton.lost" {
			t.Errorf("hold span events %v, want one baton.lost", h.Events)
		}
		var transitions float64
		for _, r := range rigs {
			v, _ := value(r.collect(t), "baton.leader.transitions", mine)
			transitions += v
		}
		if transitions != 2 {
			t.Errorf("baton.leader.transitions total %v, want 2", transitions)
		}
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("last campaign: %v, want context.Canceled", err)
		}
	})
}
