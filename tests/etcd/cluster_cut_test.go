package etcd_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/etcd"
	"github.com/batonhq/baton/internal/etcdtest"
)

// TestClusterRequestsLeaveACutLeader: with the leader's peer port
// blackholed, a request the client sends to it (or, later, to it as a
// follower: it hears the new leader but cannot reach it) is answered only
// at the server's request timeout (5 s plus two election timeouts, 7 s).
// The session gives each try a deadline of its own (1 s, 1 s, 1 s, 2 s, …)
// and retries on another member, so every create and delete, spread by
// the client over the three members, completes within the issue's
// recovery bound, an election timeout plus a session TTL (5 s). The first
// request also waits for the other members to notice the cut and elect a
// leader (up to two election timeouts, longer on a loaded machine), so its
// bound is twice that.
func TestClusterRequestsLeaveACutLeader(t *testing.T) {
	c := etcdtest.StartServeCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A TTL long enough that the session outlives the cut: the test is
	// about the requests, not about the lease.
	s, err := etcd.Open(ctx, c.Endpoints(), etcd.WithTTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close(context.Background()) }()
	conn := s.Conn()
	p := c.Members[c.Leader(30*time.Second)].Proxy
	p.Blackhole()
	defer p.Heal()
	const bound = time.Second + 4*time.Second
	var total, slowest time.Duration
	timed := func(what string, bound time.Duration, f func() error) {
		t.Helper()
		t0 := time.Now()
		err := f()
		d := time.Since(t0)
		total += d
		t.Logf("%s: %v", what, d.Round(time.Millisecond))
		slowest = max(slowest, d)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if d > bound {
			t.Errorf("%s took %v with the leader cut off, bound %v", what, d, bound)
		}
	}
	const ops = 16
	for i := range ops / 2 {
		var n backend.Node
		b := bound
		if i == 0 {
			b = 2 * bound
		}
		timed(fmt.Sprint("create ", i), b, func() (err error) {
			n, err = conn.Create(ctx, "/cut-leader", "lock", nil, backend.Ephemeral|backend.Sequential)
			return err
		})
		timed(fmt.Sprint("delete ", i), bound, func() error { return conn.Delete(ctx, n) })
	}
	t.Logf("%d requests with the leader cut off: %v on average, slowest %v", ops, (total / ops).Round(time.Millisecond), slowest.Round(time.Millisecond))
}
