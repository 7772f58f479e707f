package main

import (
	"strings"
	"testing"
)

// TestCounter: `baton counter` on a long counter (Curator's
// DistributedAtomicLong layout) and an int32 one (SharedCount): a missing
// counter reads 0, add and set print the value after, get reads either
// layout, and a value out of range is a usage error; NAME follows the one
// name rule (cnt and /cnt are one counter).
func TestCounter(t *testing.T) {
	t.Parallel()
	eachStore(t, true, func(t *testing.T, _ testStore, e []string) {
		for _, step := range []struct {
			args []string
			want string
		}{
			{[]string{"get", "/cnt"}, "0"},
			{[]string{"add", "/cnt", "5"}, "5"},
			{[]string{"add", "--lock", "/cnt-lock", "/cnt", "-2"}, "3"},
			{[]string{"set", "/cnt", "9000000000"}, "9000000000"},
			{[]string{"get", "/cnt"}, "9000000000"},
			{[]string{"set", "--int32", "/c32", "7"}, "7"},
			{[]string{"add", "--int32", "/c32", "-8"}, "-1"},
			{[]string{"get", "/c32"}, "-1"},
			// A name without its leading / is the same counter (get
			// read the raw name: ZooKeeper refused it, etcd said 0).
			{[]string{"get", "cnt"}, "9000000000"},
			{[]string{"add", "cnt", "1"}, "9000000001"},
			{[]string{"get", "c32"}, "-1"},
		} {
			out, stderr, code := run(t, e, append([]string{"counter"}, step.args...)...)
			if code != 0 || strings.TrimSpace(out) != step.want {
				t.Fatalf("counter %q: exit %d %q %q, want %s", step.args, code, out, stderr, step.want)
			}
		}
		if _, stderr, code := run(t, e, "counter", "add", "--int32", "/c32", "9000000000"); code != exitUsage {
			t.Fatalf("an int32 add out of range: exit %d %q", code, stderr)
		}
	})
}
