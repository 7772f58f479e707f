package main

import (
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/internal/zktest"
)

// kazooScript takes a kazoo Lock on argv[2] and holds it until stdin
// closes.
const kazooScript = `
import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1])
zk.start()
lock = zk.Lock(sys.argv[2], "kazoo")
lock.acquire(timeout=30)
print("kazoo acquired", flush=True)
sys.stdin.read()
lock.release()
zk.stop()
`

// TestStatusFlagsKazooOnZooKeeper: kazoo's Lock counts only its own
// "__lock__" nodes, so it takes a path that baton holds in Curator's
// layout: the unsafe mix status must flag. (baton, like Curator's readers
// of kazoo nodes, does count kazoo's node as a contender.) baton is given
// the name bare, with its "/" and nested; kazoo the absolute path, the
// znode every spelling names on ZooKeeper.
func TestStatusFlagsKazooOnZooKeeper(t *testing.T) {
	t.Parallel()
	const python = "/usr/bin/python3"
	testenv.Require(t, "kazoo for "+python+" (install python3-kazoo)", exec.Command(python, "-c", "import kazoo").Run())
	addr := zktest.Shared(t).Addr()
	e := env("BATON_STORE=zk://" + addr)
	for _, name := range spellings("kz") {
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) { statusFlagsKazoo(t, python, addr, e, name) })
	}
}

func statusFlagsKazoo(t *testing.T, python, addr string, e []string, name string) {
	path := "/" + strings.TrimPrefix(name, "/")
	holder := startHeld(t, e, "lock", name)

	kz := exec.Command(python, "-c", kazooScript, addr, path)
	var kout syncBuffer
	kz.Stdout, kz.Stderr = &kout, &kout
	stdin, err := kz.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := kz.Start(); err != nil {
		t.Fatal(err)
	}
	kdone := make(chan error, 1)
	go func() { kdone <- kz.Wait() }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kazoo output: %q", kout.String())
		}
		stdin.Close()
		select {
		case <-kdone:
		case <-time.After(10 * time.Second):
			_ = kz.Process.Kill()
			<-kdone
		}
	})

	out := waitStatus(t, e, name, 2)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	// NAME on URL, the recipe, the table's header, then one row each.
	if len(lines) != 5 || !strings.Contains(lines[3], "holder") || !strings.Contains(lines[3], path+"/_c_") {
		t.Fatalf("first contender is not baton's Curator-layout holder: %q", out)
	}
	if !strings.Contains(lines[4], "__lock__") || !strings.Contains(lines[4], "kazoo node under a Curator-layout path") ||
		!strings.Contains(lines[4], "foreign (kazoo)") || !strings.Contains(lines[4], "check the kazoo client's code") {
		t.Errorf("kazoo node not flagged: %q", out)
	}
	// Identity from the node's data; age and token from its stat; the TTL
	// is the holder's session timeout, a bound.
	if !regexp.MustCompile(` holder +\S+ pid [0-9]+ baton lock ` + regexp.QuoteMeta(name) + ` +[0-9.]+m?s +≤10s +[1-9][0-9]* `).MatchString(lines[3]) {
		t.Errorf("holder row lacks identity, age, TTL or token: %q", lines[3])
	}
	holder.signal(syscall.SIGINT)
	if code := holder.wait(10 * time.Second); code != 0 {
		t.Fatalf("holder exit %d", code)
	}
}
