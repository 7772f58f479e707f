package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batontest"
	"github.com/batonhq/baton/internal/proxy"
)

// soakDuration is how long the soak runs on each store: 8 s bounded, 10
// minutes in the full run, or BATON_SOAK_DURATION.
func soakDuration() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("BATON_SOAK_DURATION")); err == nil && d > 0 {
		return d
	}
	if full() {
		return 10 * time.Minute
	}
	return 8 * time.Second
}

// soakClient is one contender: a session through its own proxy, reopened
// whenever it is lost.
type soakClient struct {
	tg    target
	p     *proxy.Proxy
	s     *baton.Session
	opens int
}

func (c *soakClient) session(ctx context.Context) (*baton.Session, error) {
	if c.s != nil && c.s.Err() == nil {
		return c.s, nil
	}
	if c.s != nil {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		_ = c.s.Close(cctx)
		cancel()
	}
	s, err := openStore(ctx, c.tg.kind, c.p.Addr(), c.tg.ttl)
	if err != nil {
		return nil, err
	}
	c.s, c.opens = s, c.opens+1
	return s, nil
}

func (c *soakClient) close() {
	if c.s != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = c.s.Close(ctx)
		cancel()
	}
}

// soak holds the invariants every recipe must keep under faults.
type soak struct {
	mutex     batontest.Checker
	mu        sync.Mutex
	readers   int
	writers   int
	permits   int
	leaders   int
	seen      map[string]bool
	violation []string
	ops       map[string]*atomic.Int64
}

func (s *soak) fail(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.violation) < 20 {
		s.violation = append(s.violation, fmt.Sprintf(format, args...))
	}
}

// hold stays inside a critical section for up to d, leaving early when the
// lease ends.
func hold(l *baton.Lease, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-l.Done():
	}
}

// Soak: 8 contenders for each recipe on each store for soakDuration, each
// session behind its own proxy, while a fault injector blackholes and cuts
// random sessions. Checked throughout: one Mutex holder, RWMutex writers
// alone, at most 3 Semaphore holders, one leader running, no queue item
// delivered twice.
func TestSoak(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.kind, func(t *testing.T) {
			t.Parallel()
			soakStore(t, tg)
		})
	}
}

func soakStore(t *testing.T, tg target) {
	// Sessions long enough that only the injected faults lose them, not a
	// starved machine; blackholes still run past the TTL.
	tg.ttl = 4 * time.Second
	dur := soakDuration()
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	st := &soak{seen: map[string]bool{}, ops: map[string]*atomic.Int64{}}
	base := tg.path()
	recipes := []struct {
		name string
		run  func(ctx context.Context, c *soakClient, who int) error
	}{
		{"mutex", func(ctx context.Context, c *soakClient, who int) error {
			s, err := c.session(ctx)
			if err != nil {
				return err
			}
			m := baton.NewMutex(s, base+"/mutex")
			l, err := m.Lock(ctx)
			if err != nil {
				return err
			}
			sp := st.mutex.Enter(who, l.Token())
			hold(l, time.Duration(rand.IntN(3))*time.Millisecond)
			st.mutex.Leave(sp)
			return m.Unlock(ctx)
		}},
		{"rwmutex", func(ctx context.Context, c *soakClient, who int) error {
			s, err := c.session(ctx)
			if err != nil {
				return err
			}
			m := baton.NewRWMutex(s, base+"/rw")
			write := who%3 == 0
			var l *baton.Lease
			if write {
				l, err = m.Lock(ctx)
			} else {
				l, err = m.RLock(ctx)
			}
			if err != nil {
				return err
			}
			st.mu.Lock()
			if st.writers > 0 || (write && st.readers > 0) {
				st.mu.Unlock()
				st.fail("rwmutex: writer with others inside")
			} else {
				if write {
					st.writers++
				} else {
					st.readers++
				}
				st.mu.Unlock()
			}
			hold(l, time.Duration(rand.IntN(3))*time.Millisecond)
			st.mu.Lock()
			if write {
				st.writers--
				st.mu.Unlock()
				return m.Unlock(ctx)
			}
			st.readers--
			st.mu.Unlock()
			return m.RUnlock(ctx)
		}},
		{"semaphore", func(ctx context.Context, c *soakClient, who int) error {
			s, err := c.session(ctx)
			if err != nil {
				return err
			}
			m := baton.NewSemaphore(s, base+"/sem", 3)
			l, err := m.Acquire(ctx)
			if err != nil {
				return err
			}
			st.mu.Lock()
			st.permits++
			if st.permits > 3 {
				st.mu.Unlock()
				st.fail("semaphore: %d holders of 3 permits", st.permits)
			} else {
				st.mu.Unlock()
			}
			hold(l, time.Duration(rand.IntN(3))*time.Millisecond)
			st.mu.Lock()
			st.permits--
			st.mu.Unlock()
			return m.Release(ctx, l)
		}},
		{"election", func(ctx context.Context, c *soakClient, who int) error {
			s, err := c.session(ctx)
			if err != nil {
				return err
			}
			e := baton.NewElection(s, base+"/elect")
			rctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			defer cancel()
			err = e.Run(rctx, []byte(fmt.Sprint(who)), func(fctx context.Context) error {
				st.mu.Lock()
				st.leaders++
				if st.leaders > 1 {
					st.mu.Unlock()
					st.fail("election: %d leaders running", st.leaders)
				} else {
					st.mu.Unlock()
				}
				t := time.NewTimer(time.Duration(rand.IntN(3)) * time.Millisecond)
				select {
				case <-t.C:
				case <-fctx.Done():
				}
				t.Stop()
				st.mu.Lock()
				st.leaders--
				st.mu.Unlock()
				return nil
			})
			if rctx.Err() != nil && ctx.Err() == nil {
				return nil // our turn did not come in time: fine
			}
			return err
		}},
		{"queue", func(ctx context.Context, c *soakClient, who int) error {
			s, err := c.session(ctx)
			if err != nil {
				return err
			}
			q := baton.NewQueue(s, base+"/queue")
			if who%2 == 0 {
				return q.Put(ctx, []byte(fmt.Sprintf("%d-%d", who, time.Now().UnixNano())))
			}
			tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			item, err := q.Take(tctx)
			if err != nil {
				if tctx.Err() != nil && ctx.Err() == nil {
					return nil
				}
				return err
			}
			st.mu.Lock()
			dup := st.seen[string(item)]
			st.seen[string(item)] = true
			st.mu.Unlock()
			if dup {
				st.fail("queue: item %s delivered twice", item)
			}
			return nil
		}},
	}
	var clients []*soakClient
	var wg sync.WaitGroup
	for _, r := range recipes {
		st.ops[r.name] = &atomic.Int64{}
		for who := range 8 {
			c := &soakClient{tg: tg, p: proxy.Start(t, tg.addr)}
			clients = append(clients, c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.close()
				for ctx.Err() == nil {
					octx, ocancel := context.WithTimeout(ctx, 3*tg.ttl)
					if err := r.run(octx, c, who); err == nil {
						st.ops[r.name].Add(1)
					}
					ocancel()
				}
			}()
		}
	}
	// The fault injector: every 100–400 ms, blackhole one random client
	// for 50 ms to 1.5×TTL (long ones cost it its session), or cut its
	// connections.
	faults := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil && os.Getenv("BATON_SOAK_NOFAULT") == "" {
			pause := time.NewTimer(time.Duration(100+rand.IntN(300)) * time.Millisecond)
			select {
			case <-ctx.Done():
				pause.Stop()
				return
			case <-pause.C:
			}
			c := clients[rand.IntN(len(clients))]
			faults++
			if rand.IntN(3) == 0 {
				c.p.Cut()
				c.p.Heal()
				continue
			}
			c.p.Blackhole()
			d := time.Duration(50+rand.IntN(int(tg.ttl.Milliseconds()*3/2))) * time.Millisecond
			go func() {
				t := time.NewTimer(d)
				defer t.Stop()
				select {
				case <-t.C:
				case <-ctx.Done():
				}
				c.p.Heal()
			}()
		}
	}()
	wg.Wait()
	if err := st.mutex.Verify(true); err != nil {
		st.fail("mutex: %v", err)
	}
	reopened := 0
	for _, c := range clients {
		reopened += max(c.opens-1, 0)
	}
	total := int64(0)
	note := ""
	for _, r := range recipes {
		n := st.ops[r.name].Load()
		total += n
		note += fmt.Sprintf("%s %d, ", r.name, n)
		if n == 0 {
			st.fail("%s made no progress", r.name)
		}
	}
	for _, v := range st.violation {
		t.Error(v)
	}
	record(Row{Scenario: "soak: 8 contenders × 5 recipes, random faults for " + dur.String(), Store: tg.kind,
		Runs: int(total), Violations: len(st.violation),
		Note: fmt.Sprintf("%d faults injected, %d sessions reopened; ops: %s", faults, reopened, note[:len(note)-2])})
}
