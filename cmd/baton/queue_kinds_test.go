package main

import (
	"testing"
	"time"
)

func TestQueuePriorityDelay(t *testing.T) {
	t.Parallel()
	eachStore(t, true, func(t *testing.T, _ testStore, e []string) { queueKindsRun(t, e) })
}

func queueKindsRun(t *testing.T, e []string) {
	for _, x := range [][]string{{"5", "five"}, {"-2", "minus"}, {"5", "five-again"}, {"0", "zero"}} {
		if _, stderr, code := run(t, e, "queue", "put", "--priority", x[0], "/pq", x[1]); code != 0 {
			t.Fatalf("put --priority %s: %d %q", x[0], code, stderr)
		}
	}
	if out, _, code := run(t, e, "queue", "len", "--priority", "/pq"); code != 0 || out != "4\n" {
		t.Fatalf("len --priority: %d %q", code, out)
	}
	if out, _, code := run(t, e, "queue", "len", "/pq"); code != 0 || out != "0\n" {
		t.Fatalf("len of the FIFO queue on the name: %d %q, want 0", code, out)
	}
	for _, want := range []string{"minus\n", "zero\n", "five\n", "five-again\n"} {
		if out, stderr, code := run(t, e, "queue", "take", "--priority", "/pq"); code != 0 || out != want {
			t.Fatalf("take --priority: %d %q %q, want %q", code, out, stderr, want)
		}
	}
	// A delayed item is not taken before its delay.
	const d = 1500 * time.Millisecond
	start := time.Now()
	if _, stderr, code := run(t, e, "queue", "put", "--delay", d.String(), "/dq", "later"); code != 0 {
		t.Fatalf("put --delay: %d %q", code, stderr)
	}
	if _, _, code := run(t, e, "queue", "take", "--delay", "--timeout", "100ms", "/dq"); code != exitTimeout && time.Since(start) < d {
		t.Fatalf("take --delay before the delay: exit %d, want 75", code)
	}
	out, stderr, code := run(t, e, "queue", "take", "--delay", "/dq")
	if code != 0 || out != "later\n" {
		t.Fatalf("take --delay: %d %q %q", code, out, stderr)
	}
	if el := time.Since(start); el < d {
		t.Fatalf("delayed item taken %v after its put, before its delay %v", el, d)
	}
	for _, bad := range [][]string{
		{"queue", "put", "--priority", "x", "/pq", "v"},
		{"queue", "put", "--priority", "3000000000", "/pq", "v"},
		{"queue", "put", "--delay", "-1s", "/dq", "v"},
		{"queue", "take", "--priority", "--delay", "/pq"},
	} {
		if _, _, code := run(t, e, bad...); code != exitUsage {
			t.Fatalf("baton %v: exit %d, want %d", bad, code, exitUsage)
		}
	}
}
