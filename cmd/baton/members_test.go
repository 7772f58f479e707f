package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestMembers(t *testing.T) {
	t.Parallel()
	eachStore(t, true, func(t *testing.T, _ testStore, e []string) { membersRun(t, e) })
}

func membersRun(t *testing.T, e []string) {
	list := func() []memberLine {
		t.Helper()
		out, stderr, code := run(t, e, "members", "--json", "/g")
		if code != 0 {
			t.Fatalf("members --json: exit %d %q", code, stderr)
		}
		var ms []memberLine
		if err := json.Unmarshal([]byte(out), &ms); err != nil {
			t.Fatalf("members --json: %q: %v", out, err)
		}
		return ms
	}
	if ms := list(); len(ms) != 0 {
		t.Fatalf("empty group lists %+v", ms)
	}
	// A member while CMD runs: CMD sees its id; the list shows it.
	release := filepath.Join(t.TempDir(), "release")
	a := start(t, e, "members", "/g", "--join", "a", "--data", "alpha", "--", "sh", "-c",
		`echo "in $BATON_GROUP $BATON_MEMBER"; while [ ! -e "$0" ]; do sleep 0.02; done; exit 3`, release)
	a.waitOutput("in /g a\n", 10*time.Second)
	b := start(t, e, "members", "/g", "--join", "b")
	b.waitOutput("BATON_MEMBER=b", 10*time.Second)
	ms := list()
	if len(ms) != 2 || ms[0].ID != "a" || ms[0].Data != "alpha" || ms[1].ID != "b" || ms[0].Session == "" {
		t.Fatalf("members %+v, want a=alpha and b", ms)
	}
	if out, _, code := run(t, e, "members", "/g"); code != 0 || out != "a\talpha\nb\t\n" {
		t.Fatalf("members: %d %q", code, out)
	}
	// CMD's status is baton's; the member leaves with it.
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code := a.wait(10 * time.Second); code != 3 {
		t.Fatalf("member a exit %d, want CMD's 3", code)
	}
	if ms := list(); len(ms) != 1 || ms[0].ID != "b" {
		t.Fatalf("after a left: %+v", ms)
	}
	b.signal(syscall.SIGTERM)
	if code := b.wait(10 * time.Second); code != 0 {
		t.Fatalf("member b exit %d", code)
	}
	if ms := list(); len(ms) != 0 {
		t.Fatalf("after b left: %+v", ms)
	}
	for _, bad := range [][]string{
		{"members", "/g", "--", "true"},
		{"members", "/g", "--join", "x/y", "--", "true"},
		{"members", "--json", "/g", "--join", "x"},
		{"members", "/g", "--data", "d"},
	} {
		if _, _, code := run(t, e, bad...); code != exitUsage {
			t.Fatalf("baton %v: exit %d, want %d", bad, code, exitUsage)
		}
	}
}
