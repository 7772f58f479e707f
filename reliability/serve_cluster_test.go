package reliability

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/etcd"
	"github.com/batonhq/baton/internal/etcdtest"
)

// serveElection is `baton serve`'s raft election timeout (etcd's default,
// 1 s; the heartbeat is 100 ms).
const serveElection = time.Second

// freezeFor is how long a member stays frozen: longer than the session
// TTL, so that a session whose renewals wait on the frozen member is lost.
const freezeFor = 6 * time.Second

// `baton serve` cluster: 8 contenders, their sessions spread over a
// three-member cluster of `baton serve` processes, while the leader is
// killed and restarted, a follower is killed, one member's peer port is
// blackholed by a TCP proxy (the connections the others open to it hang;
// requests sent to it wait for etcd's request timeout unless the client
// gives up first), a member is frozen (SIGSTOP: cut off from peers and
// clients both ways), and all three restart. Progress resumes within an
// election timeout plus the session TTL, and no sections overlap. A
// stalled or slow recovery reports what every contender did last and
// what each member holds under the lock.
func TestServeCluster(t *testing.T) {
	c := etcdtest.StartServeCluster(t, 3)
	const ttl = 4 * time.Second
	name := "/reliability/serve-cluster"
	cs := runContenders(t, 8, name, func(ctx context.Context) (*baton.Session, error) {
		return etcd.Open(ctx, c.Endpoints(), etcd.WithTTL(ttl))
	})
	defer cs.finish()
	cs.dump = func() string { return c.Describe(name) }
	cs.progressAfter(t, time.Now(), 30*time.Second)
	bound := serveElection + ttl

	faults := func(label string, bound time.Duration, do func() time.Time) {
		row := Row{Scenario: "serve cluster: " + label, Store: "serve×3"}
		for range runs(1, 5) {
			t.Logf("%s: fault at %s", label, time.Now().Format("15:04:05.000"))
			t0 := do()
			d := cs.progressAfter(t, t0, 60*time.Second)
			row.Runs++
			row.Recovery = append(row.Recovery, d)
			if d > bound {
				row.Violations++
				t.Errorf("%s: progress after %v, bound %v\n%s", label, d, bound, cs.report())
			}
			c.WaitHealthy(60 * time.Second)
		}
		row.Note = "recovery = fault → next acquisition (bound " + bound.String() + ")"
		record(row)
	}
	faults("kill leader, restart it", bound, func() time.Time {
		l := c.Leader(30 * time.Second)
		t0 := time.Now()
		c.Kill(l)
		c.Start(l)
		return t0
	})
	faults("kill a follower", bound, func() time.Time {
		f := (c.Leader(30*time.Second) + 1) % 3
		t0 := time.Now()
		c.Kill(f)
		defer c.Start(f)
		return t0
	})
	faults("blackhole a follower's peer port (3 s)", bound, func() time.Time {
		f := (c.Leader(30*time.Second) + 2) % 3
		p := c.Members[f].Proxy
		t0 := time.Now()
		p.Blackhole()
		defer p.Heal()
		time.Sleep(3 * serveElection) // the fault's duration, not an ordering wait
		return t0
	})
	faults("blackhole the leader's peer port (3 s)", bound, func() time.Time {
		l := c.Leader(30 * time.Second)
		p := c.Members[l].Proxy
		t0 := time.Now()
		p.Blackhole()
		defer p.Heal()
		time.Sleep(3 * serveElection) // the fault's duration, not an ordering wait
		return t0
	})
	// A frozen member holds the requests sent to it until gRPC gives up
	// its connection or it comes back. A frozen follower must cost no
	// session: renewals retry on the other members. A frozen leader can:
	// no lease is renewed until the others elect a new leader, which
	// under load can take longer than a session's TTL (a safe loss, the
	// session reports it).
	freeze := func(label string, pick func() int, lossIsViolation bool) {
		row := Row{Scenario: "serve cluster: " + label, Store: "serve×3"}
		lostAll := int64(0)
		for range runs(1, 3) {
			i := pick()
			t.Logf("%s: fault at %s", label, time.Now().Format("15:04:05.000"))
			lost := cs.sessions.Load()
			t0 := time.Now()
			c.Pause(i)
			time.Sleep(freezeFor) // the fault's duration, not an ordering wait
			c.Resume(i)
			d := cs.progressAfter(t, t0, 60*time.Second)
			row.Runs++
			row.Recovery = append(row.Recovery, d)
			n := cs.sessions.Load() - lost
			lostAll += n
			if n > 0 && lossIsViolation {
				row.Violations++
				t.Errorf("%s: %d sessions lost while a follower was frozen", label, n)
			}
			c.WaitHealthy(60 * time.Second)
		}
		row.Note = "sessions lost: " + itoa64(lostAll)
		if lossIsViolation {
			row.Note += " (each one a violation)"
		}
		row.Note += "; recovery = freeze → next acquisition, unbounded: a frozen member holds the requests sent to it until it resumes"
		record(row)
	}
	freeze("freeze a follower (SIGSTOP, 6 s)", func() int { return (c.Leader(30*time.Second) + 1) % 3 }, true)
	freeze("freeze the leader (SIGSTOP, 6 s)", func() int { return c.Leader(30 * time.Second) }, false)
	faults("restart all three", bound, func() time.Time {
		for i := range c.Members {
			c.Kill(i)
		}
		c.StartAll()
		// The clock starts once the members serve again, as for the
		// ZooKeeper ensemble.
		return time.Now()
	})

	cs.finish()
	cs.stop = make(chan struct{}) // finish is deferred too
	cs.wg = sync.WaitGroup{}
	err := cs.chk.Verify(true)
	v := 0
	if err != nil {
		v = 1
		t.Error(err)
	}
	record(Row{Scenario: "serve cluster: mutual exclusion over the whole run", Store: "serve×3", Runs: int(cs.cycles.Load()), Violations: v,
		Note: "8 contenders over 3 members; sessions reopened after loss: " + itoa64(cs.sessions.Load())})
	t.Logf("%d acquisitions, %d sessions reopened", cs.cycles.Load(), cs.sessions.Load())
}
