package zk

import (
	"context"
	"errors"
	pathpkg "path"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/zktest"
)

// The extras interop tests run baton's GroupMember, priority and delay
// queues against Apache Curator's GroupMember, DistributedPriorityQueue and
// DistributedDelayQueue on one path (testdata/interop/ExtrasPeer.java).

// extrasPeer compiles testdata/interop/ExtrasPeer.java against Debian's
// jars.
func extrasPeer(t *testing.T) peer {
	return javaPeer(t, "ExtrasPeer", "Curator (javac, libcurator-recipes-java, libguava-java)",
		"curator-recipes.jar", "curator-framework.jar", "curator-client.jar",
		"zookeeper.jar", "zookeeper-jute.jar", "guava.jar", "slf4j-nop.jar")
}

// startExtras starts the peer and waits until it is ready.
func startExtras(t *testing.T, ctx context.Context, p peer, args ...string) *running {
	t.Helper()
	r := p.start(t, ctx, append([]string{zktest.Shared(t).Addr()}, args...)...)
	if l := r.line(t, ctx); l != "ready" {
		t.Fatalf("java %v: %q, want ready", args, l)
	}
	return r
}

// poll sends cmd until the answer is want.
func (r *running) poll(t *testing.T, ctx context.Context, cmd, want string) {
	t.Helper()
	var got string
	if !await.Within(30*time.Second, func() bool { got = r.do(t, ctx, cmd); return got == want }) {
		t.Fatalf("java %s: %q, want %q", cmd, got, want)
	}
}

func TestInteropExtras(t *testing.T) {
	p := extrasPeer(t)
	t.Run("GroupMember", func(t *testing.T) { testInteropGroup(t, p) })
	t.Run("PriorityQueue", func(t *testing.T) { testInteropPriority(t, p) })
	t.Run("DelayQueue", func(t *testing.T) { testInteropDelay(t, p) })
}

// Curator's GroupMember and baton's on one path see each other, with data,
// and each sees the other leave.
func testInteropGroup(t *testing.T, p peer) {
	ctx := interopCtx(t)
	path := testPath(t)
	s := openT(t, 0)
	g := baton.NewGroup(s, path)

	m := baton.NewGroupMember(func(context.Context) (*baton.Session, error) { return openT(t, 0), nil }, path, "go", []byte("gd"))
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(mctx) }()
	defer func() { stop(); <-done }()
	if err := m.Wait(ctx); err != nil {
		t.Fatal(err)
	}

	j := startExtras(t, ctx, p, "group", path, "java", "jd")
	waitMembers(t, ctx, g, "go=gd,java=jd")
	j.poll(t, ctx, "members", "go=gd,java=jd")
	_, n, err := s.Conn().Get(ctx, backend.Join(path, "java"))
	if err != nil || n.Owner == "" {
		t.Fatalf("Curator's member node: %+v %v, want ephemeral", n, err)
	}

	stop()
	if err := <-done; err != context.Canceled {
		t.Fatalf("Run: %v", err)
	}
	done <- nil
	j.poll(t, ctx, "members", "java=jd")
	j.expect(t, ctx, "quit", "bye")
	waitMembers(t, ctx, g, "")
}

// waitMembers waits until g's members render as want ("id=data,…").
func waitMembers(t *testing.T, ctx context.Context, g *baton.Group, want string) {
	t.Helper()
	var got string
	ok := await.Within(30*time.Second, func() bool {
		ms, err := g.Members(ctx)
		parts := make([]string, len(ms))
		for i, m := range ms {
			parts[i] = m.ID + "=" + string(m.Data)
		}
		got = strings.Join(parts, ",")
		return err == nil && got == want
	})
	if !ok {
		t.Fatalf("members %q, want %q", got, want)
	}
}

var (
	curatorPriorityItem = regexp.MustCompile(`^queue-[01][0-9A-F]{8}\d{10}$`)
	curatorDelayItem    = regexp.MustCompile(`^queue-(D[0-9A-F]+)?\|[0-9A-F]{8,}\|\d{10}$`)
)

// Curator's DistributedPriorityQueue and baton's PriorityQueue on one
// path: each consumes the other's items in priority order, Curator's
// consumer (lockPath PATH.claims) taking baton's items exactly once.
func testInteropPriority(t *testing.T, p peer) {
	ctx := interopCtx(t)
	path := testPath(t)
	s := openT(t, 0)
	q := baton.NewPriorityQueue(s, path)
	persistClaims(t, ctx, s, path)

	j := startExtras(t, ctx, p, "priority", path)
	for _, x := range []string{"three 3", "minus -1", "seven 7", "big 2000000000", "min -2147483648"} {
		j.expect(t, ctx, "put "+x, "ok")
	}
	for _, k := range kidsOf(t, ctx, s, path) {
		if !curatorPriorityItem.MatchString(k.Name) {
			t.Fatalf("Curator's item %q: not the expected layout", k.Name)
		}
		if _, ok := backend.ParsePriorityKind(k.Kind); !ok {
			t.Fatalf("Curator's item %q parsed as kind %q", k.Name, k.Kind)
		}
	}
	var got []string
	for range 5 {
		v, err := q.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(v))
	}
	if strings.Join(got, ",") != "min,minus,three,seven,big" {
		t.Fatalf("baton took Curator's items as %v", got)
	}
	j.expect(t, ctx, "quit", "bye")

	for _, x := range []struct {
		v string
		p int32
	}{{"b2", 2}, {"b-5", -5}, {"b9", 9}} {
		if err := q.Put(ctx, []byte(x.v), x.p); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range kidsOf(t, ctx, s, path) {
		if !curatorPriorityItem.MatchString(k.Name) {
			t.Fatalf("our item %q is not in Curator's layout", k.Name)
		}
	}
	c := startExtras(t, ctx, p, "priority", path, "consume")
	got = nil
	for range 3 {
		got = append(got, strings.TrimPrefix(c.line(t, ctx), "got "))
	}
	if strings.Join(got, ",") != "b-5,b2,b9" {
		t.Fatalf("Curator consumed our items as %v", got)
	}
	// Curator deletes an item after its consumer returns.
	var n int
	var err error
	if !await.Within(30*time.Second, func() bool { n, err = q.Len(ctx); return err == nil && n == 0 }) {
		t.Fatalf("Len after Curator consumed: %d %v", n, err)
	}
	c.expect(t, ctx, "quit", "bye")
}

// Curator's DistributedDelayQueue and baton's DelayQueue on one path:
// neither delivers the other's item before its delay.
func testInteropDelay(t *testing.T, p peer) {
	ctx := interopCtx(t)
	path := testPath(t)
	s := openT(t, 0)
	q := baton.NewDelayQueue(s, path)
	persistClaims(t, ctx, s, path)
	const d = 700 * time.Millisecond

	j := startExtras(t, ctx, p, "delay", path)
	start := time.Now()
	j.expect(t, ctx, "put curator "+strconv.Itoa(int(d.Milliseconds())), "ok")
	kids := kidsOf(t, ctx, s, path)
	if len(kids) != 1 || !curatorDelayItem.MatchString(kids[0].Name) {
		t.Fatalf("Curator's item: %+v", kids)
	}
	v, err := q.Take(ctx)
	if err != nil || string(v) != "curator" {
		t.Fatalf("Take: %q %v", v, err)
	}
	if el := time.Since(start); el < d {
		t.Fatalf("Curator's item taken %v after its put, before its delay %v", el, d)
	}
	j.expect(t, ctx, "quit", "bye")

	c := startExtras(t, ctx, p, "delay", path, "consume")
	start = time.Now()
	if err := q.Put(ctx, []byte("baton"), d); err != nil {
		t.Fatal(err)
	}
	for _, k := range kidsOf(t, ctx, s, path) {
		if !curatorDelayItem.MatchString(k.Name) {
			t.Fatalf("our item %q is not in Curator's layout", k.Name)
		}
	}
	if l := c.line(t, ctx); l != "got baton" {
		t.Fatalf("Curator consumed %q", l)
	}
	if el := time.Since(start); el < d {
		t.Fatalf("Curator consumed our item %v after the put, before its delay %v", el, d)
	}
	c.expect(t, ctx, "quit", "bye")
}

// persistClaims makes NAME.claims a persistent node, as a Curator
// consumer's start does when it comes first, and as docs/interop.md tells
// users to do when Curator consumers share a queue with baton: Curator
// creates its lock nodes there without parents, so should baton's claims
// container be reaped once empty (ZooKeeper removes empty containers), a
// Curator consumer started after baton would fail each claim with "no
// node", which it swallows, and stop consuming.
func persistClaims(t *testing.T, ctx context.Context, s *baton.Session, p string) {
	t.Helper()
	dir, base := pathpkg.Split(p)
	if _, err := s.Conn().Create(ctx, pathpkg.Clean(dir), base+".claims", nil, 0); err != nil && !errors.Is(err, baton.ErrExists) {
		t.Fatal(err)
	}
}
