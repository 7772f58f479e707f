package main

import (
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	recipe "go.etcd.io/etcd/client/v3/experimental/recipes"
	"go.uber.org/zap"
)

func TestQueuePriorityDelay(t *testing.T) {
	t.Parallel()
	eachStore(t, true, func(t *testing.T, st testStore, e []string) { queueKindsRun(t, st, e) })
}

func queueKindsRun(t *testing.T, st testStore, e []string) {
	puts := [][]string{{"5", "five"}, {"-2", "minus"}, {"5", "five-again"}, {"0", "zero"}}
	if st.name == "etcd" {
		// etcd's recipes layout takes priorities 0 to 99999 alone: the
		// same order, shifted; the others are refused as bad input.
		puts = [][]string{{"7", "five"}, {"0", "minus"}, {"7", "five-again"}, {"2", "zero"}}
		for _, bad := range []string{"-1", "100000"} {
			_, stderr, code := run(t, e, "queue", "put", "--priority", bad, "/pq", "v")
			if code != exitUsage || !strings.Contains(stderr, "0 to 99999") {
				t.Fatalf("put --priority %s on etcd: exit %d %q, want %d naming the range", bad, code, stderr, exitUsage)
			}
		}
	}
	for _, x := range puts {
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

// `baton queue take --priority` takes what etcd's recipe.PriorityQueue
// enqueued, and etcd's Dequeue takes what `baton queue put --priority`
// put, lowest priority first: one queue in etcd's layout.
func TestQueuePriorityEtcdRecipe(t *testing.T) {
	t.Parallel()
	addr := sharedEtcd(t)
	e := env("BATON_STORE=etcd://" + addr)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{addr}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	const name = "/pq-recipe"
	eq := recipe.NewPriorityQueue(cli, name)
	if err := eq.Enqueue("etcd-3", 3); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := run(t, e, "queue", "put", "--priority", "1", name, "baton-1"); code != 0 {
		t.Fatalf("put: %d %q", code, stderr)
	}
	if err := eq.Enqueue("etcd-0", 0); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := run(t, e, "queue", "put", "--priority", "2", name, "baton-2"); code != 0 {
		t.Fatalf("put: %d %q", code, stderr)
	}
	for i, want := range []string{"etcd-0", "baton-1", "baton-2", "etcd-3"} {
		var got string
		if i%2 == 0 {
			out, stderr, code := run(t, e, "queue", "take", "--priority", name)
			if code != 0 {
				t.Fatalf("take: %d %q", code, stderr)
			}
			got = strings.TrimSuffix(out, "\n")
		} else if got, err = eq.Dequeue(); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("item %d: %q, want %q", i, got, want)
		}
	}
	if out, _, code := run(t, e, "queue", "len", "--priority", name); code != 0 || out != "0\n" {
		t.Fatalf("len after all: %d %q", code, out)
	}
}

// A queue take or len of one kind (FIFO, --priority, --delay) on a name
// that holds items of another kind only says so: take exits 2 at once
// naming the flag that reaches them (it used to wait for its --timeout),
// and len, which counts its own kind on stdout, names the others on
// stderr (it used to print 0 alone, while status said "priority-queue (1
// items)").
func TestQueueOtherKinds(t *testing.T) {
	t.Parallel()
	eachStore(t, true, func(t *testing.T, st testStore, e []string) {
		const name = "qkinds"
		if _, stderr, code := run(t, e, "queue", "put", "--priority", "3", name, "x"); code != 0 {
			t.Fatalf("put --priority: exit %d %q", code, stderr)
		}
		began := time.Now()
		_, stderr, code := run(t, e, "queue", "take", "--timeout", "10s", name)
		if code != exitUsage || !strings.Contains(stderr, "1 priority item (--priority)") {
			t.Fatalf("plain take of a priority item: exit %d %q after %v, want %d naming --priority", code, stderr, time.Since(began), exitUsage)
		}
		out, stderr, code := run(t, e, "queue", "len", name)
		if code != 0 || out != "0\n" || !strings.Contains(stderr, "1 priority item (--priority) not counted") {
			t.Fatalf("plain len of a priority queue: exit %d stdout %q stderr %q", code, out, stderr)
		}
		if _, stderr, code := run(t, e, "queue", "put", name, "plain"); code != 0 {
			t.Fatalf("put: exit %d %q", code, stderr)
		}
		// Items of its own kind there: the other kind is not in the way.
		if out, stderr, code := run(t, e, "queue", "take", name); code != 0 || out != "plain\n" {
			t.Fatalf("plain take beside a priority item: exit %d %q %q", code, out, stderr)
		}
		if out, stderr, code := run(t, e, "queue", "take", "--priority", name); code != 0 || out != "x\n" {
			t.Fatalf("take --priority: exit %d %q %q", code, out, stderr)
		}
		if _, stderr, code := run(t, e, "queue", "put", name, "plain2"); code != 0 {
			t.Fatalf("put: exit %d %q", code, stderr)
		}
		_, stderr, code = run(t, e, "queue", "take", "--delay", "--timeout", "10s", name)
		if code != exitUsage || !strings.Contains(stderr, "1 FIFO item (no --priority or --delay)") {
			t.Fatalf("take --delay of a FIFO item: exit %d %q, want %d", code, stderr, exitUsage)
		}
		out, stderr, code = run(t, e, "queue", "len", "--priority", name)
		if code != 0 || out != "0\n" || !strings.Contains(stderr, "1 FIFO item") {
			t.Fatalf("len --priority of a FIFO queue: exit %d stdout %q stderr %q", code, out, stderr)
		}
	})
}
