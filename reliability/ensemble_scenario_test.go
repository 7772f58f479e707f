package reliability

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batontest"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/zk"
)

// contenders runs n clients that lock name over and over, reopening their
// session when it is lost, until stop closes. Every critical section is
// recorded in chk and ends early if the lease is lost.
type contenders struct {
	chk      batontest.Checker
	last     atomic.Int64 // unix nanos of the latest acquisition
	cycles   atomic.Int64
	sessions atomic.Int64 // sessions opened, beyond the first per client
	wg       sync.WaitGroup
	stop     chan struct{}

	// state says, per contender, what it did last and since when (its
	// last few steps): what a stalled run reports.
	state []atomic.Pointer[[]string]
	// dump, if set, adds the store's side to that report (the keys under
	// the lock, their leases).
	dump func() string
}

func runContenders(t *testing.T, n int, name string, open func(ctx context.Context) (*baton.Session, error)) *contenders {
	c := &contenders{stop: make(chan struct{}), state: make([]atomic.Pointer[[]string], n)}
	for i := range n {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.loop(t, i, name, open)
		}()
	}
	return c
}

func (c *contenders) loop(t *testing.T, who int, name string, open func(ctx context.Context) (*baton.Session, error)) {
	var s *baton.Session
	defer func() {
		if s != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = s.Close(ctx)
			cancel()
		}
	}()
	opened := 0
	set := func(format string, args ...any) {
		id := "-"
		if s != nil {
			id = s.ID()
		}
		msg := time.Now().Format("15:04:05.000") + " session " + id + ": " + fmt.Sprintf(format, args...)
		var steps []string
		if p := c.state[who].Load(); p != nil {
			steps = *p
		}
		steps = append(steps[max(0, len(steps)-stepsKept+1):len(steps):len(steps)], msg)
		c.state[who].Store(&steps)
	}
	for {
		select {
		case <-c.stop:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if s == nil || s.Err() != nil {
			if s != nil {
				_ = s.Close(ctx)
			}
			var err error
			set("opening a session")
			if s, err = open(ctx); err != nil {
				s = nil
				set("open failed: %v", err)
				cancel()
				continue
			}
			if opened++; opened > 1 {
				c.sessions.Add(1)
			}
		}
		m := baton.NewMutex(s, name)
		set("locking")
		l, err := m.Lock(ctx)
		if err != nil {
			set("lock failed: %v", err)
			cancel()
			continue
		}
		set("holding token %d", l.Token())
		c.last.Store(time.Now().UnixNano())
		c.cycles.Add(1)
		sp := c.chk.Enter(who, l.Token())
		select {
		case <-time.After(time.Millisecond):
		case <-l.Done():
		}
		c.chk.Leave(sp)
		set("unlocking token %d", l.Token())
		if err := m.Unlock(ctx); err != nil {
			set("unlock of token %d failed: %v", l.Token(), err)
		} else {
			set("unlocked token %d", l.Token())
		}
		cancel()
	}
}

// progressAfter waits until an acquisition happens after t0 and returns
// how long after t0 it was.
func (c *contenders) progressAfter(t *testing.T, t0 time.Time, limit time.Duration) time.Duration {
	if !await.Within(limit, func() bool { return c.last.Load() > t0.UnixNano() }) {
		t.Fatalf("no acquisition within %v of the fault\n%s", limit, c.report())
	}
	return time.Duration(c.last.Load() - t0.UnixNano())
}

// stepsKept is how many steps of each contender a report shows.
const stepsKept = 8

// report says what every contender is doing, and the store's side.
func (c *contenders) report() string {
	var b strings.Builder
	for i := range c.state {
		fmt.Fprintf(&b, "contender %d:\n", i)
		if p := c.state[i].Load(); p != nil {
			for _, st := range *p {
				fmt.Fprintf(&b, "  %s\n", st)
			}
		}
	}
	if c.dump != nil {
		b.WriteString(c.dump())
	}
	return b.String()
}

func (c *contenders) finish() {
	close(c.stop)
	c.wg.Wait()
}

// ZooKeeper ensemble: 8 contenders on a 3-node ensemble while the leader
// is killed and restarted, a follower is killed, and all three restart.
// Progress resumes within the session timeout and no sections overlap.
func TestZKEnsemble(t *testing.T) {
	e := startEnsemble(t)
	const ttl = 4 * time.Second
	name := "/reliability/ensemble"
	c := runContenders(t, 8, name, func(ctx context.Context) (*baton.Session, error) {
		return zk.Open(ctx, e.servers(), zk.WithTTL(ttl))
	})
	defer c.finish()
	c.progressAfter(t, time.Now(), 30*time.Second)

	faults := func(label string, do func() time.Time, within time.Duration) {
		row := Row{Scenario: "zk ensemble: " + label, Store: "zk×3"}
		n := runs(1, 3)
		for range n {
			t0 := do()
			d := c.progressAfter(t, t0, 60*time.Second)
			row.Runs++
			row.Recovery = append(row.Recovery, d)
			if d > within {
				row.Violations++
				t.Errorf("%s: progress after %v, bound %v", label, d, within)
			}
			e.waitQuorum(60 * time.Second)
		}
		row.Note = "recovery = fault → next acquisition (bound " + within.String() + ")"
		record(row)
	}
	faults("kill leader, restart it", func() time.Time {
		l := e.leader(30 * time.Second)
		t0 := time.Now()
		e.kill(l)
		e.start(l)
		return t0
	}, ttl)
	faults("kill a follower", func() time.Time {
		l := e.leader(30 * time.Second)
		f := (l + 1) % 3
		t0 := time.Now()
		e.kill(f)
		defer e.start(f)
		return t0
	}, ttl)
	faults("restart all three", func() time.Time {
		for i := range 3 {
			e.kill(i)
		}
		for i := range 3 {
			e.start(i)
		}
		// The clock starts once the servers are back. A session the
		// client gave up while they were down keeps its nodes until the
		// restarted ensemble expires it, a full timeout later, as after a
		// crash: progress within TTL + 1 s.
		e.waitQuorum(60 * time.Second)
		return time.Now()
	}, ttl+time.Second)

	c.finish()
	c.stop = make(chan struct{}) // finish is deferred too
	c.wg = sync.WaitGroup{}
	err := c.chk.Verify(true)
	v := 0
	if err != nil {
		v = 1
		t.Error(err)
	}
	record(Row{Scenario: "zk ensemble: mutual exclusion over the whole run", Store: "zk×3", Runs: int(c.cycles.Load()), Violations: v,
		Note: "8 contenders; sessions reopened after loss: " + itoa64(c.sessions.Load())})
	t.Logf("%d acquisitions, %d sessions reopened", c.cycles.Load(), c.sessions.Load())
}
