package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBadNames: one rule for every store. Each bad NAME is a usage error
// (exit 2) before anything is dialled, with the same one line on every
// store, "baton: COMMAND: invalid name …", the name quoted as Go would
// (never raw).
func TestBadNames(t *testing.T) {
	t.Parallel()
	dead := closedPort(t)
	stores := []string{"zk://" + dead, "etcd://" + dead, "redis://" + dead, "redlock://" + dead + "," + closedPort(t) + "," + closedPort(t)}
	for _, tc := range []struct{ name, want string }{
		{"/a/../b", `baton: lock: invalid name "/a/../b": a ".." element`},
		{"/a/./b", `baton: lock: invalid name "/a/./b": a "." element`},
		{"/a//b", `baton: lock: invalid name "/a//b": an empty element (a doubled or trailing /)`},
		{"a/", `baton: lock: invalid name "a/": an empty element (a doubled or trailing /)`},
		{"/", `baton: lock: invalid name "/": empty`},
		{"locks/\U0001F600", `baton: lock: invalid name "locks/\U0001f600": U+1F600 is a character ZooKeeper refuses, so no store takes it`},
		{"a\xffb", `baton: lock: invalid name "a\xffb": not UTF-8`},
		{"a\x1bb", `baton: lock: invalid name "a\x1bb": U+001B is a character ZooKeeper refuses, so no store takes it`},
		{"job:token", `baton: lock: invalid name "job:token": ends in ":token", a key Redis lock "job" uses`},
	} {
		for _, st := range stores {
			_, stderr, code := run(t, env(), "lock", "--store", st, "--dial-timeout", "1s", tc.name, "--", "true")
			if code != exitUsage || stderr != tc.want+"\n" {
				t.Errorf("lock %q on %s: exit %d, stderr %q; want %d, %q", tc.name, st, code, stderr, exitUsage, tc.want)
			}
		}
	}
	// Every command cleans its NAME the same way.
	for _, args := range [][]string{
		{"status", "/a/../b"}, {"elect", "/a/../b", "--", "true"}, {"semaphore", "-n", "1", "/a/../b", "--", "true"},
		{"barrier", "wait", "/a/../b"}, {"barrier", "double", "-n", "2", "/a/../b"}, {"queue", "len", "/a/../b"},
		{"lock", "/x", "/a/../b", "--", "true"},
	} {
		_, stderr, code := run(t, env(), append(append([]string{}, args[:1]...), append([]string{"--store", "zk://" + dead}, args[1:]...)...)...)
		if code != exitUsage || stderr != "baton: "+args[0]+`: invalid name "/a/../b": a ".." element`+"\n" {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
}

// TestNameForms: on every store, the README's quick-start name is taken
// as written ($BATON_LOCK shows it so), and its other spelling, with a
// leading "/", is the same lock on ZooKeeper (which needs absolute paths)
// and another lock on etcd and Redis, where baton keys a name as the
// store's own tools do (baton.CleanName); there `status` points the
// other spelling out. A nested lock on the same lock is refused, in
// either spelling on ZooKeeper.
func TestNameForms(t *testing.T) {
	t.Parallel()
	eachStore(t, false, func(t *testing.T, st testStore, e []string) {
		name := "nightly-report-" + st.name // the quick start's, one per store
		one := st.name == "zk"
		holder := start(t, e, "lock", name, "--", "sh", "-c", `echo "held $BATON_LOCK"; sleep 60`)
		holder.waitOutput("held "+name+"\n", 30*time.Second)
		out, stderr, code := run(t, e, "status", "/"+name)
		note := fmt.Sprintf("note: %s (the other spelling of /%s) is held by ", name, name)
		switch {
		case code != 0:
			t.Errorf("status /%s: exit %d, stderr %q", name, code, stderr)
		case one && (!strings.HasPrefix(out, "/"+name+" on ") || !strings.Contains(out, "1 holding") || strings.Contains(out, "note:")):
			t.Errorf("status /%s while %s is held (one znode): %q", name, name, out)
		case !one && (!strings.Contains(out, "0 holding") || !strings.Contains(out, note)):
			t.Errorf("status /%s while %s is held (another lock): %q lacks %q", name, name, out, note)
		}
		if _, stderr, code := run(t, e, "lock", "--try", "/"+name, "--", "true"); code != map[bool]int{true: exitTimeout, false: 0}[one] {
			t.Errorf("lock --try /%s while %s is held: exit %d, stderr %q", name, name, code, stderr)
		}
		// A nested lock on the same lock is refused; on ZooKeeper in the
		// other spelling too.
		nested := append(append([]string{}, e...), "BATON_LOCK="+name)
		if _, stderr, code := run(t, nested, "lock", name, "--", "true"); code != exitUsage || !strings.Contains(stderr, "a nested one would wait for itself") {
			t.Errorf("nested lock %s under BATON_LOCK=%s: exit %d, stderr %q", name, name, code, stderr)
		}
		_, stderr, code = run(t, nested, "lock", "--try", "/"+name, "--", "true")
		if one && (code != exitUsage || !strings.Contains(stderr, "a nested one would wait for itself")) || !one && code != 0 {
			t.Errorf("nested lock /%s under BATON_LOCK=%s: exit %d, stderr %q", name, name, code, stderr)
		}
		holder.signal(syscall.SIGTERM)
		holder.wait(30 * time.Second)
		if out, stderr, code := run(t, e, "lock", "--try", "/"+name, "--", "sh", "-c", `echo "$BATON_LOCK"`); code != 0 || out != "/"+name+"\n" {
			t.Errorf("lock --try /%s once free: exit %d, stdout %q, stderr %q", name, code, out, stderr)
		}
	})
}

// TestOtherSpellingNoted: where NAME and its other spelling are two locks
// (etcd, Redis), `lock -v NAME` waiting in NAME's line and `status NAME`
// say when the other spelling is held: a lock an older baton, which took
// NAME as /NAME, still holds.
func TestOtherSpellingNoted(t *testing.T) {
	t.Parallel()
	eachStore(t, false, func(t *testing.T, st testStore, e []string) {
		if st.name == "zk" {
			return // one znode for both spellings (TestNameForms)
		}
		name := "spelled-" + st.name
		old, _ := holderOf(t, e, "/"+name)
		_, held := holderOf(t, e, name)
		host, _ := os.Hostname()
		want := fmt.Sprintf("note: /%s (the other spelling of %s) is held by %s pid %d (baton lock /%s); on this store that is another lock (baton before names were kept as written took %s as /%s)",
			name, name, host, old.cmd.Process.Pid, name, name, name)
		out, _, code := run(t, e, "status", name)
		if code != 0 || !strings.Contains(out, "  "+want+"\n") {
			t.Errorf("status %s: exit %d, %q lacks %q", name, code, out, want)
		}
		w := start(t, e, "lock", "-v", name, "--", "true")
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(w.stderr.String(), held+"; "+want) {
			if time.Now().After(deadline) {
				t.Fatalf("lock -v %s never showed %q: %q", name, held+"; "+want, w.stderr.String())
			}
			<-time.After(20 * time.Millisecond) // poll interval
		}
	})
}
