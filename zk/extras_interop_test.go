package zk

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
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
	if !waitUntil(30*time.Second, func() bool { got = r.do(t, ctx, cmd); return got == want }) {
		t.Fatalf("java %s: %q, want %q", cmd, got, want)
	}
}

// waitUntil polls cond every 20 ms until it holds or d passes: the Java
// side's caches give no event a Go test could wait on.
func waitUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

func TestInteropExtras(t *testing.T) {
	p := extrasPeer(t)
	t.Run("GroupMember", func(t *testing.T) { testInteropGroup(t, p) })
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
	_, n, err := s.Conn().Get(ctx, baton.Join(path, "java"))
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
	ok := waitUntil(30*time.Second, func() bool {
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
