package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestBenchMemoryJSON(t *testing.T) {
	var out, errb bytes.Buffer
	m := &Main{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := m.Run(ctx, []string{"bench", "--store", "memory://", "--workload", "floor,contended,herd",
		"--clients", "3", "--waiters", "20", "--duration", "100ms", "--json"})
	if err != nil {
		t.Fatalf("bench: %v (%s)", err, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 JSON lines, got %q", out.String())
	}
	for i, want := range []string{"floor", "contended", "herd"} {
		var r struct {
			Workload string  `json:"workload"`
			AcqPerS  float64 `json:"acq_per_s"`
		}
		if err := json.Unmarshal([]byte(lines[i]), &r); err != nil {
			t.Fatal(err)
		}
		if r.Workload != want || r.AcqPerS <= 0 {
			t.Errorf("line %d: %s", i, lines[i])
		}
	}
}

func TestBenchBadWorkload(t *testing.T) {
	var out, errb bytes.Buffer
	m := &Main{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	err := m.Run(context.Background(), []string{"bench", "--store", "memory://", "--workload", "nope"})
	if m.Exit(err) != exitUsage {
		t.Fatalf("exit %d for an unknown workload (%v)", m.Exit(err), err)
	}
}

// TestBenchBadFlags: a count below 1, a zero duration, the durations every
// command checks and an empty --store are usage errors (exit 2), found
// before anything is dialled (the store is a closed port), instead of the
// workloads' defaults taking their place without a word.
func TestBenchBadFlags(t *testing.T) {
	t.Parallel()
	dead := "etcd://" + closedPort(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--clients", "0"}, "baton: bench: --clients 0: must be at least 1\n"},
		{[]string{"--clients", "-1"}, "baton: bench: --clients -1: must be at least 1\n"},
		{[]string{"--waiters", "0"}, "baton: bench: --waiters 0: must be at least 1\n"},
		{[]string{"--locks", "0"}, "baton: bench: --locks 0: must be at least 1\n"},
		{[]string{"--duration", "0"}, "baton: bench: --duration 0s: must be positive\n"},
		{[]string{"--ttl", "0"}, "--ttl 0s: must be between 1s and 24h0m0s\n"},
		{[]string{"--dial-timeout", "0"}, "--dial-timeout 0s: must be positive\n"},
		{[]string{"--store", ""}, "baton: bench: --store is empty"},
	} {
		var out, errb bytes.Buffer
		m := &Main{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
		args := append([]string{"bench", "--store", dead, "--workload", "uncontended"}, tc.args...)
		code := m.Exit(m.Run(context.Background(), args))
		if code != exitUsage || strings.Count(errb.String(), "\n") != 1 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("baton %q: exit %d, stderr %q; want %d and %q", args, code, errb.String(), exitUsage, tc.want)
		}
	}
}

// TestBenchUnreachable: `baton bench` on a store nobody listens on fails
// within --dial-timeout, exit 1 and one line, for every workload (the
// floor's raw clients waited on such a store for ever).
func TestBenchUnreachable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, w := range []string{"floor", "all"} {
		var out, errb bytes.Buffer
		m := &Main{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
		start := time.Now()
		code := m.Exit(m.Run(ctx, []string{"bench", "--store", "etcd://" + closedPort(t), "--dial-timeout", "1s", "--workload", w}))
		took := time.Since(start)
		checkOneLine(t, "bench --workload "+w, errb.String(), code, "cannot reach store")
		if code != exitFailure || took > 10*time.Second {
			t.Errorf("bench --workload %s on a closed port: exit %d after %v; want %d within 10s (--dial-timeout 1s)", w, code, took, exitFailure)
		}
	}
}
