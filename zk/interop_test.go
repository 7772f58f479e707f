package zk

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/internal/zktest"
)

// The interop tests run baton's Mutex against the lock recipes of other
// clients on one path: Apache Curator's InterProcessMutex (Java), kazoo's
// Lock (Python) and go-zookeeper's Lock. Each must see the others' nodes
// as contenders: never two holders, and a holder of one kind blocks the
// others.

const javaDir = zktest.JavaDir

// peer is one foreign lock client program.
type peer struct {
	name string
	cmd  func(ctx context.Context, args ...string) *exec.Cmd
}

// curatorPeer compiles testdata/interop/CuratorLock.java against Debian's
// jars.
func curatorPeer(t *testing.T) peer {
	_, err := exec.LookPath("javac")
	if err == nil {
		_, err = os.Stat(filepath.Join(javaDir, "curator-recipes.jar"))
	}
	testenv.Require(t, "Curator (javac, libcurator-recipes-java)", err)
	cp := strings.Join([]string{
		filepath.Join(javaDir, "curator-recipes.jar"),
		filepath.Join(javaDir, "curator-framework.jar"),
		filepath.Join(javaDir, "curator-client.jar"),
		filepath.Join(javaDir, "zookeeper.jar"),
		filepath.Join(javaDir, "slf4j-nop.jar"),
	}, ":")
	classes := t.TempDir()
	out, err := exec.Command("javac", "-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC", "-d", classes, "-cp", cp, filepath.Join("testdata", "interop", "CuratorLock.java")).CombinedOutput()
	if err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	return peer{name: "curator", cmd: func(ctx context.Context, args ...string) *exec.Cmd {
		return exec.CommandContext(ctx, "java", append([]string{"-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", classes + ":" + cp, "CuratorLock"}, args...)...)
	}}
}

// kazooPeer runs testdata/interop/kazoo_lock.py with Debian's python3.
func kazooPeer(t *testing.T) peer {
	const py = "/usr/bin/python3"
	out, err := exec.Command(py, "-c", "import kazoo").CombinedOutput()
	if err != nil {
		err = fmt.Errorf("%v: %s", err, out)
	}
	testenv.Require(t, "kazoo (/usr/bin/python3, python3-kazoo)", err)
	script, _ := filepath.Abs(filepath.Join("testdata", "interop", "kazoo_lock.py"))
	return peer{name: "kazoo", cmd: func(ctx context.Context, args ...string) *exec.Cmd {
		return exec.CommandContext(ctx, py, append([]string{script}, args...)...)
	}}
}

// running is a started peer process with its output read line by line.
type running struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	errb  strings.Builder
}

func (p peer) start(t *testing.T, ctx context.Context, args ...string) *running {
	t.Helper()
	r := &running{cmd: p.cmd(ctx, args...), lines: make(chan string, 16)}
	r.cmd.Stderr = &r.errb
	var err error
	if r.stdin, err = r.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
	}()
	t.Cleanup(func() {
		_ = r.stdin.Close()
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
	})
	return r
}

// line returns the peer's next output line.
func (r *running) line(t *testing.T, ctx context.Context) string {
	t.Helper()
	select {
	case l, ok := <-r.lines:
		if !ok {
			_ = r.cmd.Wait()
			t.Fatalf("%s exited: %s", r.cmd.Path, r.errb.String())
		}
		return l
	case <-ctx.Done():
		t.Fatalf("%s: no output: %v\n%s", r.cmd.Path, ctx.Err(), r.errb.String())
	}
	return ""
}

func interopCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// lockNodes counts the lock contenders under path, as baton parses them.
func lockNodes(t *testing.T, ctx context.Context, c backend.Conn, path string) []backend.Node {
	t.Helper()
	kids, err := c.Children(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	return onlyLocks(kids)
}

// onlyLocks keeps the lock nodes of kids.
func onlyLocks(kids []backend.Node) []backend.Node {
	var out []backend.Node
	for _, k := range kids {
		if k.Kind == backend.KindLock {
			out = append(out, k)
		}
	}
	return out
}

// lockCount accepts a directory with n or more lock nodes.
func lockCount(n int) func([]backend.Node) bool {
	return func(kids []backend.Node) bool { return len(onlyLocks(kids)) >= n }
}

var (
	curatorName = regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-\d{10}$`)
	kazooName   = regexp.MustCompile(`^[0-9a-f]{32}__lock__\d{10}$`)
)

// zkSpellings are the spellings of a name the interop tests give baton:
// bare, with its leading "/", and nested (bare). Curator, kazoo and
// go-zookeeper take absolute paths only, so the peer is given the path
// with its "/": on ZooKeeper every spelling is the znode at that path
// (baton.CleanName), one lock with the peer's.
var zkSpellings = []struct {
	label, sub string
	bare       bool
}{{"Bare", "", true}, {"Slash", "", false}, {"NestedBare", "/a/b", true}}

// eachSpelling runs f once per spelling, each a subtest with a fresh
// path: path is the peer's (absolute), name baton's.
func eachSpelling(t *testing.T, f func(t *testing.T, path, name string)) {
	for _, sp := range zkSpellings {
		t.Run(sp.label, func(t *testing.T) {
			path := testPath(t) + sp.sub
			name := path
			if sp.bare {
				name = strings.TrimPrefix(path, "/")
			}
			f(t, path, name)
		})
	}
}

// testPeerHoldsBatonWaits: the peer holds path; baton's TryLock on name
// (its spelling of path) is refused and its Lock queues behind the peer's
// node, then takes over on release.
func testPeerHoldsBatonWaits(t *testing.T, p peer, names *regexp.Regexp, path, name string) {
	ctx := interopCtx(t)
	srv := zktest.Shared(t)
	s := openT(t, 0)
	r := p.start(t, ctx, "hold", srv.Addr(), path)
	held := r.line(t, ctx)
	kids := strings.Split(strings.TrimPrefix(held, "held "), ",")
	if len(kids) != 1 || !names.MatchString(kids[0]) {
		t.Fatalf("%s's lock node %q does not have the expected layout %s", p.name, held, names)
	}
	if n := lockNodes(t, ctx, s.Conn(), name); len(n) != 1 || n[0].Name != kids[0] {
		t.Fatalf("baton parses %s's node as %+v", p.name, n)
	}
	m := baton.NewMutex(s, name)
	if m.Name() != path {
		t.Fatalf("Name() = %q, want the znode %q", m.Name(), path)
	}
	if _, err := m.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryLock while %s holds: %v, want ErrLocked", p.name, err)
	}
	var released atomic.Bool
	got := make(chan error, 1)
	go func() {
		_, err := m.Lock(ctx)
		if err == nil && !released.Load() {
			err = fmt.Errorf("baton acquired while %s still held the lock", p.name)
		}
		got <- err
	}()
	await.Children(t, ctx, s.Conn(), path, 20*time.Second, "baton to queue behind "+p.name, lockCount(2))
	released.Store(true)
	if _, err := io.WriteString(r.stdin, "release\n"); err != nil {
		t.Fatal(err)
	}
	if l := r.line(t, ctx); l != "released" {
		t.Fatalf("%s said %q", p.name, l)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// testBatonHoldsPeerWaits: baton holds name; the peer queues behind
// baton's node at path and acquires only after Unlock.
func testBatonHoldsPeerWaits(t *testing.T, p peer, path, name string) {
	ctx := interopCtx(t)
	srv := zktest.Shared(t)
	s := openT(t, 0)
	m := baton.NewMutex(s, name)
	if _, err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	r := p.start(t, ctx, "hold", srv.Addr(), path)
	await.Children(t, ctx, s.Conn(), path, 40*time.Second, p.name+" to queue behind baton", lockCount(2))
	if n := len(lockNodes(t, ctx, s.Conn(), path)); n != 2 {
		t.Fatalf("%d contenders, want baton's and %s's", n, p.name)
	}
	select {
	case l := <-r.lines:
		t.Fatalf("%s acquired while baton holds: %q", p.name, l)
	default:
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if l := r.line(t, ctx); !strings.HasPrefix(l, "held ") {
		t.Fatalf("%s said %q", p.name, l)
	}
	if _, err := io.WriteString(r.stdin, "release\n"); err != nil {
		t.Fatal(err)
	}
	if l := r.line(t, ctx); l != "released" {
		t.Fatalf("%s said %q", p.name, l)
	}
}

// appendLine appends one line to the shared log with O_APPEND, so lines
// written by several processes interleave whole.
func appendLine(f *os.File, s string) error {
	_, err := f.WriteString(s + "\n")
	return err
}

// checkLog verifies that critical sections in the log never overlap: every
// "E x" is followed at once by "L x".
func checkLog(t *testing.T, logPath string, want map[string]int) {
	t.Helper()
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	got := map[string]int{}
	for i := 0; i+1 < len(lines); i += 2 {
		e, l := lines[i], lines[i+1]
		if !strings.HasPrefix(e, "E ") || l != "L "+e[2:] {
			t.Fatalf("overlapping critical sections at line %d: %q then %q", i+1, e, l)
		}
		got[e[2:]]++
	}
	if len(lines)%2 != 0 {
		t.Fatalf("unterminated critical section: %q", lines[len(lines)-1])
	}
	for who, n := range want {
		if got[who] != n {
			t.Fatalf("%s: %d critical sections, want %d (all: %v)", who, got[who], n, got)
		}
	}
	// Hand-offs between different clients show they really contended.
	handoffs := 0
	for i := 2; i+1 < len(lines); i += 2 {
		if lines[i] != lines[i-2] {
			handoffs++
		}
	}
	t.Logf("%d critical sections, %d hand-offs between clients: %v", len(lines)/2, handoffs, got)
}

// testMixed runs the peers, two baton sessions and optionally go-zookeeper's
// Lock concurrently on one path (baton given it as name), each for cycles
// critical sections.
func testMixed(t *testing.T, peers []peer, withGoZK bool, cycles int, path, name string) {
	ctx := interopCtx(t)
	srv := zktest.Shared(t)
	logPath := filepath.Join(t.TempDir(), "sections.log")
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]int{}
	var runs []*running
	for _, p := range peers {
		runs = append(runs, p.start(t, ctx, "loop", srv.Addr(), path, fmt.Sprint(cycles), logPath))
		want[p.name] = cycles
	}
	for i, r := range runs { // connected: start everyone together
		if l := r.line(t, ctx); l != "ready" {
			t.Fatalf("%s said %q", peers[i].name, l)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for i := range 2 {
		who := fmt.Sprintf("baton%d", i)
		want[who] = cycles
		m := baton.NewMutex(openT(t, 0), name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range cycles {
				if _, err := m.Lock(ctx); err != nil {
					errs <- fmt.Errorf("%s: %w", who, err)
					return
				}
				err := errors.Join(appendLine(f, "E "+who), appendLine(f, "L "+who), m.Unlock(ctx))
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	if withGoZK {
		want["gozk"] = cycles
		zc, _, err := gozk.Connect(srv.Servers(), 10*time.Second, gozk.WithLogger(nopLogger{}))
		if err != nil {
			t.Fatal(err)
		}
		defer zc.Close()
		l := gozk.NewLock(zc, path, gozk.WorldACL(gozk.PermAll))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range cycles {
				if err := l.Lock(); err != nil {
					errs <- fmt.Errorf("go-zookeeper: %w", err)
					return
				}
				err := errors.Join(appendLine(f, "E gozk"), appendLine(f, "L gozk"), l.Unlock())
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i, r := range runs {
		if l := r.line(t, ctx); l != "done" {
			t.Fatalf("%s said %q", peers[i].name, l)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkLog(t, logPath, want)
}

func TestInteropCurator(t *testing.T) {
	zktest.Shared(t)
	p := curatorPeer(t)
	t.Run("CuratorHolds", func(t *testing.T) {
		eachSpelling(t, func(t *testing.T, path, name string) { testPeerHoldsBatonWaits(t, p, curatorName, path, name) })
	})
	t.Run("BatonHolds", func(t *testing.T) {
		eachSpelling(t, func(t *testing.T, path, name string) { testBatonHoldsPeerWaits(t, p, path, name) })
	})
	t.Run("Mixed", func(t *testing.T) {
		eachSpelling(t, func(t *testing.T, path, name string) { testMixed(t, []peer{p}, true, 15, path, name) })
	})
	t.Run("Digest", func(t *testing.T) { testCuratorDigest(t, p) })
}

// testCuratorDigest: Curator and baton authenticated as the same digest
// identity, both creating nodes creator-only, share a lock: baton accepts
// the directory Curator made and queues behind Curator's node, which a
// stranger cannot delete.
func testCuratorDigest(t *testing.T, p peer) {
	ctx := interopCtx(t)
	// Curator creates missing parents creator-only too: keep them out of
	// /baton-test, which the other tests on the shared server use.
	path := "/digest" + testPath(t)
	srv := zktest.Shared(t)
	alice := peer{name: p.name, cmd: func(ctx context.Context, args ...string) *exec.Cmd {
		c := p.cmd(ctx, args...)
		c.Env = append(os.Environ(), "ZK_DIGEST=alice:pw-alice")
		return c
	}}
	r := alice.start(t, ctx, "hold", srv.Addr(), path)
	held := r.line(t, ctx)
	node := path + "/" + strings.TrimPrefix(held, "held ")
	if err := rawConn(t, srv.Addr(), "mallory:pw").Delete(node, -1); !errors.Is(err, gozk.ErrNoAuth) {
		t.Fatalf("stranger deleting Curator's node: %v, want ErrNoAuth", err)
	}
	s := openAt(t, srv.Addr(), secTTL, digest("alice"), WithACL(CreatorACL...))
	m := baton.NewMutex(s, path)
	if _, err := m.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryLock while Curator holds: %v, want ErrLocked", err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := m.Lock(ctx)
		got <- err
	}()
	waitKids(t, ctx, s, path, 2)
	if _, err := io.WriteString(r.stdin, "release\n"); err != nil {
		t.Fatal(err)
	}
	if l := r.line(t, ctx); l != "released" {
		t.Fatalf("curator said %q", l)
	}
	if err := within(t, got, 20*time.Second, "baton after Curator's release"); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestInteropKazoo(t *testing.T) {
	zktest.Shared(t)
	p := kazooPeer(t)
	t.Run("KazooHolds", func(t *testing.T) {
		eachSpelling(t, func(t *testing.T, path, name string) { testPeerHoldsBatonWaits(t, p, kazooName, path, name) })
	})
	t.Run("BatonHolds", func(t *testing.T) {
		eachSpelling(t, func(t *testing.T, path, name string) { testBatonHoldsPeerWaits(t, p, path, name) })
	})
	t.Run("Mixed", func(t *testing.T) {
		eachSpelling(t, func(t *testing.T, path, name string) { testMixed(t, []peer{p}, false, 15, path, name) })
	})
}
