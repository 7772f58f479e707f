package main

import (
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/store"
)

func TestWrapFlag(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"_c_x-lock-0000000001":    "",
		"_c_x-lock-2147483000":    "near",
		"ab12__lock__-2147483648": "wrapped",
		"_c_x-lock--000000005":    "wrapped",
		"694d8a7c3b1e0f02":        "",
		"qn-":                     "",
		"_c_2b4c5e4b-0f3e-4d9b-bc39-lock-0000000042": "",
	} {
		got := wrapFlag(name)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("wrapFlag(%q) = %q, want containing %q", name, got, want)
		}
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	now := time.Now()
	u, _ := store.Parse("zk://h")
	kids := []baton.Node{
		{Path: "/l/_c_a-lock-0000000001", Name: "_c_a-lock-0000000001", Kind: baton.KindLock, Owner: "s1", Token: 7, Created: now.Add(-2 * time.Second)},
		{Path: "/l/f00d__lock__0000000002", Name: "f00d__lock__0000000002", Kind: baton.KindLock, Owner: "s2", Token: 9},
		{Path: "/l/junk", Name: "junk"},
	}
	rep := describe("/l", u, kids, now)
	if rep.Holders != 1 || rep.Waiters != 1 {
		t.Fatalf("holders %d waiters %d", rep.Holders, rep.Waiters)
	}
	if r := rep.Nodes[0]; r.Role != "holder" || r.Session != "s1" || r.Age != "2s" || r.Token != 7 {
		t.Errorf("first row %+v", r)
	}
	if r := rep.Nodes[1]; r.Role != "waiter" || len(r.Flags) != 1 || !strings.Contains(r.Flags[0], "kazoo node under a Curator") {
		t.Errorf("second row %+v", r)
	}
	if r := rep.Nodes[2]; r.Role != "foreign" || len(r.Flags) != 1 {
		t.Errorf("third row %+v", r)
	}
}
