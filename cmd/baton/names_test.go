package main

import (
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

// TestNameForms: on every store, the README's quick-start name is taken,
// and a NAME with or without its leading "/" is one lock: the second
// --try finds it taken. CMD sees the canonical name in $BATON_LOCK.
func TestNameForms(t *testing.T) {
	t.Parallel()
	eachStore(t, false, func(t *testing.T, st testStore, e []string) {
		name := "nightly-report-" + st.name // the quick start's, one per store
		holder := start(t, e, "lock", name, "--", "sh", "-c", `echo "held $BATON_LOCK"; sleep 60`)
		holder.waitOutput("held /"+name+"\n", 30*time.Second)
		if _, stderr, code := run(t, e, "status", "--held", "/"+name); code != 0 {
			t.Errorf("status --held /%s while %s is held: exit %d, stderr %q; want 0", name, name, code, stderr)
		}
		if _, stderr, code := run(t, e, "lock", "--try", "/"+name, "--", "true"); code != exitTimeout {
			t.Errorf("lock --try /%s while %s is held: exit %d, stderr %q; want %d", name, name, code, stderr, exitTimeout)
		}
		// A nested lock on the same lock, in the other form, is refused.
		_, stderr, code := run(t, append(append([]string{}, e...), "BATON_LOCK="+name), "lock", "/"+name, "--", "true")
		if code != exitUsage || !strings.Contains(stderr, "a nested one would wait for itself") {
			t.Errorf("nested lock /%s under BATON_LOCK=%s: exit %d, stderr %q", name, name, code, stderr)
		}
		holder.signal(syscall.SIGTERM)
		holder.wait(30 * time.Second)
		if out, stderr, code := run(t, e, "lock", "--try", "/"+name, "--", "sh", "-c", `echo "$BATON_LOCK"`); code != 0 || out != "/"+name+"\n" {
			t.Errorf("lock --try /%s once free: exit %d, stdout %q, stderr %q", name, code, out, stderr)
		}
	})
}
