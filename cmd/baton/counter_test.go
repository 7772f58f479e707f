package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestCounter: `baton counter` on a long counter (Curator's
// DistributedAtomicLong layout) and an int32 one (SharedCount): a missing
// counter reads 0, add and set print the value after, get reads either
// layout, and a value out of range is a usage error; NAME follows the one
// name rule: kept as written, so cnt and /cnt are one counter on
// ZooKeeper (the znode /cnt) and two on etcd.
func TestCounter(t *testing.T) {
	t.Parallel()
	eachStore(t, true, func(t *testing.T, st testStore, e []string) {
		one := st.name == "zk"
		either := func(zk, etcd string) string { return map[bool]string{true: zk, false: etcd}[one] }
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
			// Without its leading /: the same counter on ZooKeeper (get
			// reads the node itself), another one on etcd.
			{[]string{"get", "cnt"}, either("9000000000", "0")},
			{[]string{"add", "cnt", "1"}, either("9000000001", "1")},
			{[]string{"get", "c32"}, either("-1", "0")},
			{[]string{"get", "/cnt"}, either("9000000001", "9000000000")},
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

// 40 `counter add C 1`, 20 at once, without --lock: every one exits 0 and
// the count is 40, on a long counter and an int32 one. (On ZooKeeper 5 in
// 40 used to exit 1, "changed meanwhile: 10 tries collided": an add whose
// optimistic tries run out now takes turns on the lock C.lock, as
// Curator's PromotedToLock does.)
func TestCounterContention(t *testing.T) {
	t.Parallel()
	eachStore(t, true, func(t *testing.T, _ testStore, e []string) {
		for _, c := range []struct {
			name string
			args []string
		}{{"/cnt-busy", nil}, {"cnt-busy32", []string{"--int32"}}} {
			const adds, parallel = 40, 20
			var failed []string
			for round := range adds / parallel {
				ps := make([]*proc, parallel)
				for i := range ps {
					ps[i] = start(t, e, append(append([]string{"counter", "add"}, c.args...), c.name, "1")...)
				}
				for i, p := range ps {
					if code := p.wait(60 * time.Second); code != 0 {
						failed = append(failed, fmt.Sprintf("round %d add %d: exit %d %q", round, i, code, p.stderr.String()))
					}
				}
			}
			out, stderr, code := run(t, e, "counter", "get", c.name)
			if len(failed) > 0 || code != 0 || strings.TrimSpace(out) != fmt.Sprint(adds) {
				t.Fatalf("counter %s after %d adds: %q (exit %d %q); failed adds: %q", c.name, adds, out, code, stderr, failed)
			}
		}
	})
}
