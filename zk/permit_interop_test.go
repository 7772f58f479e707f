package zk

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/await"
)

// The permit interop tests run baton's PermitSemaphore against Apache
// Curator's InterProcessSemaphoreV2 on one name
// (testdata/interop/PermitPeer.java): a baton permit is a Curator lease
// node, the two share the N permits, each is handed what the other gives
// back, and a permit is extended or released by id from another baton
// process while Curator waits for it.

// permitPeer compiles testdata/interop/PermitPeer.java against Debian's
// jars.
func permitPeer(t *testing.T) peer {
	return javaPeer(t, "PermitPeer", "Curator (javac, libcurator-recipes-java, libguava-java)",
		"curator-recipes.jar", "curator-framework.jar", "curator-client.jar",
		"zookeeper.jar", "zookeeper-jute.jar", "guava.jar", "slf4j-nop.jar")
}

// curatorGot reads the peer's answer to acquire: the node of its lease.
func curatorGot(t *testing.T, ctx context.Context, j *running) string {
	t.Helper()
	l := j.line(t, ctx)
	node, ok := strings.CutPrefix(l, "ok ")
	if !ok || !curatorLease.MatchString(node) {
		t.Fatalf("Curator's acquire: %q", l)
	}
	return node
}

// nodeOf is the lease node name in a permit id.
func nodeOf(id string) string { name, _, _ := strings.Cut(id, "@"); return name }

func TestInteropPermit(t *testing.T) {
	p := permitPeer(t)
	// Every spelling of the name baton may be given (Curator's is the
	// absolute path).
	t.Run("HandOff", func(t *testing.T) {
		eachSpelling(t, func(t *testing.T, path, name string) { testInteropPermitHandOff(t, p, path, name) })
	})
	t.Run("Mixed", func(t *testing.T) {
		eachSpelling(t, func(t *testing.T, path, name string) { testInteropPermitMixed(t, p, path, name) })
	})
}

// testInteropPermitHandOff: two permits shared by a baton holder and a
// Curator client that reads their number from NAME/permits. Each side's
// lease is a lease to the other; a Curator acquirer waiting is handed a
// permit another baton process releases by id, and an expired baton
// permit (no sooner than the time to live another process extended it
// to); a baton acquirer waiting is handed what Curator returns; a Curator
// lease released by id from baton frees its permit.
func testInteropPermitHandOff(t *testing.T, p peer, path, name string) {
	ctx := interopCtx(t)
	as := openT(t, 0)
	holder := baton.NewPermitSemaphore(openT(t, 0), name, 2)
	admin := baton.NewPermitSemaphore(as, name, 2)
	leases := backend.Join(name, "leases")

	pa, err := holder.Acquire(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// Curator reads N from NAME/permits, the number baton recorded.
	j := startExtras(t, ctx, p, path, "shared")
	j.expect(t, ctx, "count", "2")
	j.send(t, "acquire")
	c1 := curatorGot(t, ctx, j)
	if got, want := j.do(t, ctx, "leases"), strings.Join([]string{nodeOf(pa.ID), c1}, ","); got != want && got != c1+","+nodeOf(pa.ID) {
		t.Fatalf("Curator's view of the leases: %q, want our permit's node and its own (%s)", got, want)
	}
	if !curatorLease.MatchString(nodeOf(pa.ID)) {
		t.Fatalf("our permit's node %q is not in Curator's layout", nodeOf(pa.ID))
	}
	ps, err := admin.Permits(ctx)
	if err != nil || len(ps) != 2 || ps[0].ID != pa.ID || ps[0].TTL != time.Minute || nodeOf(ps[1].ID) != c1 || ps[1].TTL != 0 || ps[1].Waiting {
		t.Fatalf("Permits with baton and Curator holding: %+v %v", ps, err)
	}
	if err := admin.Extend(ctx, ps[1].ID, time.Minute); !errors.Is(err, baton.ErrIncompatible) {
		t.Fatalf("Extend of Curator's lease: %v, want ErrIncompatible", err)
	}
	if _, err := holder.TryAcquire(ctx, time.Minute); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryAcquire with both permits held: %v, want ErrLocked", err)
	}
	j.expect(t, ctx, "try", "no")

	// Curator waits; another baton process releases our permit by id.
	j.send(t, "acquire")
	waitKids(t, ctx, as, leases, 3)
	select {
	case l := <-j.lines:
		t.Fatalf("Curator answered %q with both permits held", l)
	case <-time.After(300 * time.Millisecond): // a negative: give it a moment
	}
	if err := admin.ReleaseID(ctx, pa.ID); err != nil {
		t.Fatal(err)
	}
	c2 := curatorGot(t, ctx, j)
	<-pa.Lease.Done()
	if !errors.Is(pa.Lease.Err(), baton.ErrRevoked) {
		t.Fatalf("holder's Lease after release by id: %v, want ErrRevoked", pa.Lease.Err())
	}
	if err := holder.Release(ctx, pa); !errors.Is(err, baton.ErrLost) {
		t.Fatalf("holder's Release after release by id: %v, want ErrLost", err)
	}

	// We wait; Curator returns a lease.
	var returned atomic.Bool
	got := make(chan *baton.Permit, 1)
	go func() {
		pb, err := holder.Acquire(ctx, permitTTL)
		if err != nil || !returned.Load() {
			t.Errorf("Acquire: %v (before Curator returned a lease: %v)", err, !returned.Load())
		}
		got <- pb
	}()
	waitKids(t, ctx, as, leases, 3)
	returned.Store(true)
	j.expect(t, ctx, "release "+c1, "ok")
	pb := within(t, got, 20*time.Second, "baton after Curator returned a lease")
	if pb == nil {
		t.FailNow()
	}

	// Curator waits for our permit, which another process extends: it
	// is handed over when the extended time to live has run out.
	extended := time.Now()
	if err := admin.Extend(ctx, pb.ID, 3*permitTTL); err != nil {
		t.Fatal(err)
	}
	j.send(t, "acquire")
	c3 := curatorGot(t, ctx, j)
	if el := time.Since(extended); el < 3*permitTTL {
		t.Fatalf("Curator got the extended permit %v after the extension, before its time to live %v", el, 3*permitTTL)
	}
	select {
	case <-pb.Lease.Done():
	default:
		t.Fatal("Curator got the permit before its baton holder's Lease ended")
	}
	if !errors.Is(pb.Lease.Err(), baton.ErrPermitExpired) {
		t.Fatalf("expired Lease.Err: %v", pb.Lease.Err())
	}

	// A Curator lease released by id frees its permit for us; Curator's
	// own return of it later is harmless.
	got2 := make(chan error, 1)
	go func() {
		pc, err := holder.Acquire(ctx, time.Minute)
		if err == nil {
			err = holder.Release(ctx, pc)
		}
		got2 <- err
	}()
	waitKids(t, ctx, as, leases, 3)
	ps, err = admin.Permits(ctx)
	if err != nil || len(ps) != 3 || nodeOf(ps[0].ID) != c2 || nodeOf(ps[1].ID) != c3 || !ps[2].Waiting {
		t.Fatalf("Permits with Curator holding both and baton waiting: %+v %v", ps, err)
	}
	if err := admin.ReleaseID(ctx, ps[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := within(t, got2, 20*time.Second, "baton after Curator's lease was released by id"); err != nil {
		t.Fatal(err)
	}
	j.expect(t, ctx, "release "+c2, "ok")
	j.expect(t, ctx, "release "+c3, "ok")
	if ps, err := admin.Permits(ctx); err != nil || len(ps) != 0 {
		t.Fatalf("Permits at the end: %+v %v", ps, err)
	}
}

// permitTTL is the time to live of the short permits in the tests.
const permitTTL = 600 * time.Millisecond

// testInteropPermitMixed: Curator's threads and baton's goroutines, each
// on a session of its own, contend for 3 permits on one name, holding each
// for 1-10 ms: never more than 3 inside at once, and Curator's and baton's
// holders inside together.
func testInteropPermitMixed(t *testing.T, p peer, path, name string) {
	const (
		n       = 3
		cycles  = 12
		javaThr = 2
	)
	ctx := interopCtx(t)
	logPath := filepath.Join(t.TempDir(), "sections.log")
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	j := startExtras(t, ctx, p, path, fmt.Sprint(n))
	want := map[string]int{}
	for i := range javaThr {
		want[fmt.Sprintf("curator%d", i)] = cycles
	}
	var sems []*baton.PermitSemaphore
	for range 2 {
		sems = append(sems, baton.NewPermitSemaphore(openT(t, 0), name, n))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	start := make(chan struct{})
	for i := range 4 {
		who := fmt.Sprintf("baton%d", i)
		want[who] = cycles
		sem := sems[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range cycles {
				pm, err := sem.Acquire(ctx, time.Minute)
				if err != nil {
					errs <- fmt.Errorf("%s: %w", who, err)
					return
				}
				err = appendLine(f, "E "+who)
				holdFor(pm.Lease, time.Millisecond+rand.N(9*time.Millisecond))
				err = errors.Join(err, appendLine(f, "L "+who), sem.Release(ctx, pm))
				if err != nil {
					errs <- fmt.Errorf("%s: %w", who, err)
					return
				}
			}
		}()
	}
	j.send(t, fmt.Sprintf("loop %d %d %s", javaThr, cycles, logPath))
	// baton's goroutines start once a Curator thread is inside: started
	// at once, they could finish their cycles before the JVM's threads
	// take their first permit, and no holder would ever enter beside one
	// of the other kind (it happened, on an idle machine).
	await.Until(t, 30*time.Second, "a Curator thread inside", func() bool {
		b, err := os.ReadFile(logPath)
		return err == nil && strings.Contains(string(b), "E curator")
	})
	close(start)
	if l := j.line(t, ctx); l != "done" {
		t.Fatalf("Curator's threads: %q", l)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkCountingLog(t, logPath, n, want)
}

// holdFor stays inside a critical section for d, leaving early if l ends.
func holdFor(l *baton.Lease, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-l.Done():
	}
}

// checkCountingLog verifies a log of "E who" and "L who" lines written by
// the holders of a semaphore of n: never more than n inside at once, each
// holder leaving before entering again, and want sections of each.
func checkCountingLog(t *testing.T, logPath string, n int, want map[string]int) {
	t.Helper()
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	inside := map[string]bool{}
	got := map[string]int{}
	most, mixed := 0, 0
	for i, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		op, who, ok := strings.Cut(l, " ")
		switch {
		case ok && op == "E" && !inside[who]:
			inside[who] = true
			got[who]++
			if len(inside) > n {
				t.Fatalf("line %d: %d holders inside a semaphore of %d: %v", i+1, len(inside), n, inside)
			}
			most = max(most, len(inside))
			kinds := map[bool]bool{}
			for h := range inside {
				kinds[strings.HasPrefix(h, "curator")] = true
			}
			if len(kinds) == 2 {
				mixed++
			}
		case ok && op == "L" && inside[who]:
			delete(inside, who)
		default:
			t.Fatalf("line %d: %q out of turn (inside: %v)", i+1, l, inside)
		}
	}
	if len(inside) != 0 {
		t.Fatalf("unterminated sections: %v", inside)
	}
	if mixed == 0 {
		t.Fatal("no holder ever entered beside a holder of the other kind: the permits were not shared")
	}
	for who, c := range want {
		if got[who] != c {
			t.Fatalf("%s: %d sections, want %d (all: %v)", who, got[who], c, got)
		}
	}
	t.Logf("at most %d of %d inside at once; %d entries beside a holder of the other kind", most, n, mixed)
}
