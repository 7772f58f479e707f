package reliability

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batontest"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/rediskeys"
	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/redis"
)

// The Redis Cluster scenarios: three masters with a replica each
// (redistest.StartCluster, cluster-node-timeout 1 s), clients that each
// contend for many names (one worker per client and name, as processes
// sharing locks would), critical sections of 1 ms checked per name.

// Locks on 100 names spread over the slots of every master, four clients
// each: no overlap, tokens increasing per name, every waiter served.
func TestRedisClusterManySlots(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 1)
	ld := newClusterLoad(t, cl, namesIn("many", 100, nil), 4)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rounds := runs(5, 30)
	ld.run(ctx, 5*time.Second, rounds, nil)
	row := Row{Scenario: "Redis Cluster: 100 names in many slots, 4 clients each", Store: "redis-cluster 3+3"}
	ld.check(t, ctx, &row, 100*4*rounds)
	if n := ld.lockErrs.Load() + ld.unlockErrs.Load(); n > 0 {
		t.Errorf("%d failed Locks or Unlocks without a fault", n)
	}
	row.Note = fmt.Sprintf("%d slots; %s", slotsOf(ld.names), ld.summary())
	record(row)
}

// A slot migration under load: redis-cli --cluster reshard moves the 200
// lowest slots of the first master, holding 40 names in use, to the
// second master and back, while four clients lock and hand off each
// name. Commands follow ASK and MOVED (and retry on TRYAGAIN while a
// script's keys are split between the nodes); waiters' sharded
// subscriptions follow their slot.
func TestRedisClusterReshard(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 1)
	const moved = 200
	ld := newClusterLoad(t, cl, namesIn("reshard", 40, func(s int) bool { return s < moved }), 4)
	a, b := cl.MasterOf(0), cl.MasterOf(rediskeys.Slots-1)
	if a == nil || b == nil || a == b {
		t.Fatal("no two masters found")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := runs(1, 3)
	row := Row{Scenario: fmt.Sprintf("Redis Cluster: %d slots resharded to another master and back under load", moved), Store: "redis-cluster 3+3", Runs: n}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		ld.run(ctx, 5*time.Second, 5, stop)
	}()
	ld.waitFor(t, 400, 20*time.Second)
	var reshardErr error
	for range n {
		for _, pair := range [][2]*redistest.Server{{a, b}, {b, a}} {
			start := time.Now()
			out, err := cl.Reshard(pair[0], pair[1], moved)
			if err != nil {
				reshardErr = fmt.Errorf("%v: %s", err, tail(out))
				break
			}
			cl.WaitOK()
			row.Recovery = append(row.Recovery, time.Since(start))
		}
	}
	close(stop)
	<-done
	if reshardErr != nil {
		t.Fatalf("reshard: %v", reshardErr)
	}
	ld.check(t, ctx, &row, 40*4*5)
	row.Note = "recovery = one reshard of the slots (they are in use throughout); " + ld.summary()
	record(row)
}

// A master failover: the master of a held lock is SIGKILLed, with a
// waiter in line behind the holder and four clients locking 40 names in
// its slots and the other masters'; its replica is promoted after the
// cluster-node-timeout (1 s) and an election. The holder keeps its lease
// if a renewal reaches the promoted replica within its validity (TTL
// 10 s, renewed every TTL/3), then hands the lock to the waiter.
func TestRedisClusterFailover(t *testing.T) {
	n := runs(1, 3)
	row := Row{Scenario: "Redis Cluster: a master SIGKILLed under load, its replica promoted", Store: "redis-cluster 3+3", Runs: n}
	var promoted, served []string
	survived, retried := 0, 0
	var loads []string
	for i := range n {
		o := clusterFailoverOnce(t, i, &row)
		promoted = append(promoted, o.promoted.Round(100*time.Millisecond).String())
		served = append(served, o.served.Round(time.Millisecond).String())
		if o.survived {
			survived++
		}
		if o.retried {
			retried++
		}
		loads = append(loads, o.load)
	}
	row.Note = fmt.Sprintf("TTL 10s, cluster-node-timeout 1s; recovery = kill → first acquisition, in the killed master's slots, by a Lock begun after the kill; "+
		"replica promoted after %s; the lock held across the kill kept its lease in %d of %d runs (its Unlock said lost, a retried release, in %d), and its waiter held %s after its release; load: %s",
		strings.Join(promoted, ", "), survived, n, retried, strings.Join(served, ", "), strings.Join(loads, " / "))
	record(row)
}

// failoverRun is what one failover run saw.
type failoverRun struct {
	promoted, served time.Duration // kill → promotion; release → the waiter holds
	survived         bool          // the held lease lasted through the failover
	retried          bool          // its Unlock said lost after a retried release
	load             string
}

func clusterFailoverOnce(t *testing.T, run int, row *Row) failoverRun {
	cl := redistest.StartCluster(t, 3, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const ttl = 10 * time.Second
	victim := cl.MasterOf(0)
	onVictim := func(s int) bool { return s <= 5460 } // the first master's, as created
	ld := newClusterLoad(t, cl, namesIn(fmt.Sprintf("failover%d", run), 40, nil), 4)

	// A holder and a waiter on a name of the victim's.
	held := namesIn(fmt.Sprintf("failover%d/held", run), 1, onVictim)[0]
	hc, wc := dialCluster(t, ctx, cl), dialCluster(t, ctx, cl)
	holder, waiter := redis.NewMutex(hc, held, redis.WithTTL(ttl)), redis.NewMutex(wc, held, redis.WithTTL(ttl))
	lease, err := holder.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	var waited time.Time
	go func() {
		l, err := waiter.Lock(ctx)
		if err == nil {
			waited = time.Now()
			if l.Token() <= lease.Token() {
				err = fmt.Errorf("the waiter's token %d is not above the holder's %d", l.Token(), lease.Token())
			}
			_ = waiter.Unlock(ctx)
		}
		got <- err
	}()

	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		ld.run(ctx, ttl, 5, stop)
	}()
	ld.waitFor(t, 400, 20*time.Second)
	killed := time.Now()
	ld.mark(killed)
	victim.Kill()
	promoted := cl.Promoted(0, victim)
	promotedAfter := time.Since(killed)
	// Once promoted, the holder hands over; its lease must have lasted.
	if !awaitAcquiredAfter(ld, onVictim, 30*time.Second) {
		t.Errorf("no acquisition in the killed master's slots within 30 s")
	}
	select {
	case <-lease.Done():
		t.Logf("the holder's lease ended: %v", lease.Err())
	default:
	}
	heldOn := lease.Err() == nil
	// What the promoted replica holds for the lock: the holder's value
	// unless the failover lost it (asynchronous replication).
	before, _ := hc.Redis().Get(ctx, held).Result()
	pttl, _ := hc.Redis().PTTL(ctx, held).Result()
	t.Logf("before the release: %s = %q, pttl %v, the lease valid for %v more", held, before, pttl, time.Until(lease.Deadline()).Round(time.Millisecond))
	if heldOn && before == "" {
		row.Violations++
		t.Errorf("the failover lost the key of a lock whose lease was live")
	}
	released := time.Now()
	retried := false
	if err := holder.Unlock(ctx); err != nil && heldOn {
		if errors.Is(err, baton.ErrLost) && before != "" {
			// The key was the holder's: a release whose reply was lost
			// ran again, and found the lock handed on by its first run.
			retried = true
			t.Logf("holder's Unlock after the failover: %v (its key was still its own)", err)
		} else {
			t.Errorf("holder's Unlock after the failover: %v", err)
		}
	}
	select {
	case err := <-got:
		if err != nil {
			t.Errorf("waiter: %v", err)
		}
	case <-time.After(ttl + 10*time.Second):
		t.Fatalf("the waiter was not served within %v of the release", ttl+10*time.Second)
	}
	if heldOn && waited.Before(released) {
		row.Violations++
		t.Errorf("the waiter held %v before the holder, whose lease was live, released", released.Sub(waited))
	}
	close(stop)
	<-done
	ld.check(t, ctx, row, 40*4*5)
	if first := ld.firstAfter(onVictim); !first.IsZero() {
		row.Recovery = append(row.Recovery, first.Sub(killed))
	}
	t.Logf("%s killed, %s promoted after %v", victim.Addr(), promoted.Addr(), promotedAfter.Round(time.Millisecond))
	return failoverRun{promoted: promotedAfter, served: waited.Sub(released), survived: heldOn, retried: retried, load: ld.short()}
}

// awaitAcquiredAfter waits until a Lock of the load begun after its mark
// took a lock in a slot of in.
func awaitAcquiredAfter(ld *clusterLoad, in func(int) bool, d time.Duration) bool {
	return await.Within(d, func() bool { return !ld.firstAfter(in).IsZero() })
}

// namesIn returns n names prefix/i whose slots in accepts (nil: any).
func namesIn(prefix string, n int, in func(slot int) bool) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		name := fmt.Sprintf("%s/%d", prefix, i)
		if in == nil || in(rediskeys.Slot(name)) {
			out = append(out, name)
		}
	}
	return out
}

func slotsOf(names []string) int {
	s := map[int]bool{}
	for _, n := range names {
		s[rediskeys.Slot(n)] = true
	}
	return len(s)
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}

// dialCluster connects to the cluster, counting into r (if not nil) what
// each node answered, and closes the client when the test ends.
func dialCluster(t *testing.T, ctx context.Context, cl *redistest.Cluster) *redis.Client {
	t.Helper()
	// go-redis logs every failed dial; a failover makes many.
	quietOnce.Do(func() { goredis.SetLogger(quietLog{}) })
	c, err := redis.Dial(ctx, cl.URL())
	if err != nil {
		t.Fatalf("dial %s: %v", cl.URL(), err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// redirects counts the answers of the cluster's nodes that made a
// command go again: MOVED, ASK, TRYAGAIN, CLUSTERDOWN, and failed
// connections. A go-redis node hook sees every attempt.
type redirects struct {
	moved, ask, tryAgain, down, conn atomic.Int64
}

func (r *redirects) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (r *redirects) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		err := next(ctx, cmd)
		r.count(err)
		return err
	}
}

func (r *redirects) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			r.count(c.Err())
		}
		return err
	}
}

func (r *redirects) count(err error) {
	if err == nil || errors.Is(err, goredis.Nil) {
		return
	}
	s := err.Error()
	switch {
	case strings.HasPrefix(s, "MOVED "):
		r.moved.Add(1)
	case strings.HasPrefix(s, "ASK "):
		r.ask.Add(1)
	case strings.HasPrefix(s, "TRYAGAIN"):
		r.tryAgain.Add(1)
	case strings.HasPrefix(s, "CLUSTERDOWN"):
		r.down.Add(1)
	case strings.Contains(s, "connect") || strings.Contains(s, "EOF") || strings.Contains(s, "reset") || strings.Contains(s, "i/o timeout"):
		r.conn.Add(1)
	}
}

// clusterLoad is clients processes (a Client each) each looping over
// names: each (client, name) pair is one worker that takes its lock
// rounds times with a critical section of 1 ms, checked per name.
type clusterLoad struct {
	names   []string
	clients []*redis.Client
	checks  []*batontest.Checker
	redir   redirects

	acquired, lockErrs, unlockErrs atomic.Int64
	marked                         atomic.Int64   // unix ns; 0: none
	first                          []atomic.Int64 // per name, the first acquisition by a Lock begun after marked (unix ns)

	mu   sync.Mutex
	lat  []time.Duration
	errs []string
}

func newClusterLoad(t *testing.T, cl *redistest.Cluster, names []string, clients int) *clusterLoad {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ld := &clusterLoad{names: names, first: make([]atomic.Int64, len(names))}
	for range names {
		ld.checks = append(ld.checks, &batontest.Checker{})
	}
	for range clients {
		c := dialCluster(t, ctx, cl)
		cc := c.Redis().(*goredis.ClusterClient)
		cc.OnNewNode(func(n *goredis.Client) { n.AddHook(&ld.redir) })
		_ = cc.ForEachShard(ctx, func(_ context.Context, n *goredis.Client) error {
			n.AddHook(&ld.redir)
			return nil
		})
		ld.clients = append(ld.clients, c)
	}
	return ld
}

func (ld *clusterLoad) note(format string, args ...any) {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	if len(ld.errs) < 10 {
		ld.errs = append(ld.errs, fmt.Sprintf(format, args...))
	}
}

// mark starts recording each name's first acquisition after at.
func (ld *clusterLoad) mark(at time.Time) { ld.marked.Store(at.UnixNano()) }

// firstAfter is the earliest acquisition by a Lock begun after the mark
// on a name whose slot in accepts; zero if none yet.
func (ld *clusterLoad) firstAfter(in func(int) bool) time.Time {
	var best int64
	for i, n := range ld.names {
		if f := ld.first[i].Load(); f != 0 && in(rediskeys.Slot(n)) && (best == 0 || f < best) {
			best = f
		}
	}
	if best == 0 {
		return time.Time{}
	}
	return time.Unix(0, best)
}

// waitFor waits until the load made n acquisitions, failing after d.
func (ld *clusterLoad) waitFor(t *testing.T, n int64, d time.Duration) {
	t.Helper()
	if !await.Within(d, func() bool { return ld.acquired.Load() >= n }) {
		t.Fatalf("the load made %d acquisitions in %v, want %d", ld.acquired.Load(), d, n)
	}
}

// run runs every worker until it has taken its lock rounds times and
// stop is closed (nil: rounds only), or ctx ends. A failed Lock is
// retried, as a user would, and counted.
func (ld *clusterLoad) run(ctx context.Context, ttl time.Duration, rounds int, stop <-chan struct{}) {
	var wg sync.WaitGroup
	for ci, c := range ld.clients {
		for ni, name := range ld.names {
			wg.Add(1)
			go func() {
				defer wg.Done()
				m := redis.NewMutex(c, name, redis.WithTTL(ttl))
				for n := 0; ctx.Err() == nil; {
					if n >= rounds {
						if stop == nil {
							return
						}
						select {
						case <-stop:
							return
						default:
						}
					}
					start := time.Now()
					lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
					l, err := m.Lock(lctx)
					cancel()
					if err != nil {
						if ctx.Err() == nil {
							ld.lockErrs.Add(1)
							ld.note("client %d %s: lock: %v", ci, name, err)
						}
						continue
					}
					now := time.Now()
					ld.mu.Lock()
					ld.lat = append(ld.lat, now.Sub(start))
					ld.mu.Unlock()
					if mk := ld.marked.Load(); mk != 0 && start.UnixNano() > mk {
						ld.first[ni].CompareAndSwap(0, now.UnixNano())
					}
					ld.acquired.Add(1)
					sp := ld.checks[ni].Enter(ci, l.Token())
					hold(l, time.Millisecond)
					ld.checks[ni].Leave(sp)
					if err := m.Unlock(context.WithoutCancel(ctx)); err != nil {
						ld.unlockErrs.Add(1)
						ld.note("client %d %s: unlock: %v", ci, name, err)
					}
					n++
				}
			}()
		}
	}
	wg.Wait()
}

// check counts overlaps and tokens that did not increase, per name, into
// row's violations, failing the test on any, and fails it when fewer
// than want acquisitions were made (a waiter was not served).
func (ld *clusterLoad) check(t *testing.T, ctx context.Context, row *Row, want int) {
	t.Helper()
	if ctx.Err() != nil {
		t.Errorf("the load did not finish in time: %d acquisitions", ld.acquired.Load())
	}
	for i, ch := range ld.checks {
		if err := ch.Verify(true); err != nil {
			row.Violations++
			t.Errorf("%s: %v", ld.names[i], err)
		}
	}
	if row.Runs == 0 {
		row.Runs = int(ld.acquired.Load())
	}
	if got := ld.acquired.Load(); got < int64(want) {
		t.Errorf("%d acquisitions, want at least %d: not every waiter was served", got, want)
	}
	t.Log(ld.summary())
	for _, e := range ld.errs {
		t.Log(e)
	}
}

// short is summary in a few words: acquisitions, Lock p99 and max, and
// the node answers that sent a command again.
func (ld *clusterLoad) short() string {
	ld.mu.Lock()
	d := append([]time.Duration(nil), ld.lat...)
	ld.mu.Unlock()
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	if len(d) == 0 {
		return "no acquisitions"
	}
	r := &ld.redir
	return fmt.Sprintf("%d acquisitions, Lock p99 %v max %v, failed Locks %d Unlocks %d, CLUSTERDOWN %d, connection errors %d, MOVED %d",
		ld.acquired.Load(), d[len(d)*99/100].Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond),
		ld.lockErrs.Load(), ld.unlockErrs.Load(), r.down.Load(), r.conn.Load(), r.moved.Load())
}

// summary says what the load did and what the cluster's redirections
// cost it.
func (ld *clusterLoad) summary() string {
	ld.mu.Lock()
	d := append([]time.Duration(nil), ld.lat...)
	ld.mu.Unlock()
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	q := func(p int) time.Duration {
		if len(d) == 0 {
			return 0
		}
		return d[min(len(d)*p/100, len(d)-1)].Round(100 * time.Microsecond)
	}
	r := &ld.redir
	return fmt.Sprintf("%d acquisitions by %d clients × %d names, Lock p50 %v p99 %v max %v; failed Locks %d, Unlocks %d (retried by the workers); node answers that sent a command again: MOVED %d, ASK %d, TRYAGAIN %d, CLUSTERDOWN %d, connection errors %d",
		ld.acquired.Load(), len(ld.clients), len(ld.names), q(50), q(99), q(100),
		ld.lockErrs.Load(), ld.unlockErrs.Load(),
		r.moved.Load(), r.ask.Load(), r.tryAgain.Load(), r.down.Load(), r.conn.Load())
}
