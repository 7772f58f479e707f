package main

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/etcd/embedded"
	"github.com/batonhq/baton/internal/zktest"
)

// outageRuns is how many times TestWaiterSurvivesOutage restarts each
// store under a waiter.
const outageRuns = 6

// A waiter that holds nothing survives a short store outage (the server
// killed and restarted): it acquires once the holder releases. In even
// runs the server comes back at once, and the waiter's session may ride
// through; in odd runs it stays down longer than the waiter's TTL, so the
// waiter loses its session and place for sure: it must say so, open a new
// session and rejoin the line. The holder, whose session outlives the
// outage, keeps the lock meanwhile.
func TestWaiterSurvivesOutage(t *testing.T) {
	t.Parallel()
	stores := []struct {
		name  string
		start func(t *testing.T) (url string, restart func(down time.Duration) error)
	}{
		{"zk", func(t *testing.T) (string, func(time.Duration) error) {
			s := zktest.Start(t)
			return "zk://" + s.Addr(), s.Restart
		}},
		{"etcd", func(t *testing.T) (string, func(time.Duration) error) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			s, err := embedded.Start(ctx, embedded.Config{DataDir: t.TempDir(), Fast: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return "etcd://" + s.Addr(), func(down time.Duration) error {
				s.Stop()
				<-time.After(down) // the outage
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				return s.Restart(ctx)
			}
		}},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			u, restart := st.start(t)
			e := env("BATON_STORE=" + u)
			for i := range outageRuns {
				name := fmt.Sprintf("/outage%d", i)
				long := i%2 == 1
				// The holder's session outlives even a slow restart.
				holder := start(t, e, "lock", "--ttl", "60s", name)
				holder.waitOutput("BATON_TOKEN=", 20*time.Second)
				// A waiter's TTL long enough for its CMD to run under
				// load once it holds; the long outage outlasts it.
				ttl, down := "20s", time.Duration(0)
				if long {
					ttl, down = "3s", 4*time.Second
				}
				waiter := start(t, e, "lock", "--ttl", ttl, name, "--", "echo", "acquired")
				waitReport(t, e, name, "the waiter queued", counts(1, 1), holder, waiter)
				if err := restart(down); err != nil {
					t.Fatal(err)
				}
				if long {
					waitStderr(t, waiter, "lost its place in line")
				}
				// The waiter is back in line (rejoined, or its node kept;
				// a lost session's node gone), and the holder still holds.
				waitReport(t, e, name, "the waiter in line after the restart", counts(1, 1), holder, waiter)
				select {
				case <-waiter.done:
					t.Fatalf("run %d: the waiter exited %d during the outage; stderr %q", i, waiter.code, waiter.stderr.String())
				default:
				}
				holder.signal(syscall.SIGINT)
				// Its release may wait for its session to reconnect, up to
				// its TTL: a ZooKeeper client was seen to get no reply for
				// over 16 s after a restart on a loaded machine.
				if code := holder.wait(90 * time.Second); code != 0 {
					t.Fatalf("run %d: holder exit %d, stderr %q", i, code, holder.stderr.String())
				}
				if code := waiter.wait(30 * time.Second); code != 0 || waiter.stdout.String() != "acquired\n" {
					t.Fatalf("run %d: waiter exit %d, stdout %q, stderr %q", i, code, waiter.stdout.String(), waiter.stderr.String())
				}
				t.Logf("run %d: waiter stderr %q", i, strings.TrimSpace(waiter.stderr.String()))
			}
		})
	}
}

// waitStderr waits up to 30 s until p's stderr contains want.
func waitStderr(t *testing.T, p *proc, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(p.stderr.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("baton %v never printed %q on stderr: %q", p.cmd.Args[1:], want, p.stderr.String())
		}
		<-time.After(10 * time.Millisecond) // poll interval
	}
}

// TestRetryBudget: a waiter that lost its place with the store gone for
// good gives up --retry after it said so, not later: the dial of a new
// session gets what is left of --retry, and closing the lost session does
// not wait on a revoke the server will never answer. (On etcd it took the
// whole 5 s dial timeout, and then a TTL for that revoke.)
func TestRetryBudget(t *testing.T) {
	t.Parallel()
	stores := []struct {
		name  string
		start func(t *testing.T) (url string, stop func())
	}{
		{"zk", func(t *testing.T) (string, func()) {
			s := zktest.Start(t)
			return "zk://" + s.Addr(), s.Stop
		}},
		{"etcd", func(t *testing.T) (string, func()) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			s, err := embedded.Start(ctx, embedded.Config{DataDir: t.TempDir(), Fast: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return "etcd://" + s.Addr(), s.Stop
		}},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			u, stop := st.start(t)
			e := env("BATON_STORE=" + u)
			const name, retry = "/retry-budget", 2 * time.Second
			holder := start(t, e, "lock", "--ttl", "60s", name)
			holder.waitOutput("BATON_TOKEN=", 20*time.Second)
			waiter := start(t, e, "lock", "--ttl", "6s", "--retry", retry.String(), name, "--", "true")
			waitReport(t, e, name, "the waiter queued", counts(1, 1), holder, waiter)
			stop()
			waitStderr(t, waiter, "lost its place in line")
			t0 := time.Now()
			code := waiter.wait(60 * time.Second)
			d := time.Since(t0)
			t.Logf("waiter gave up %v after it lost its place; stderr %q", d.Round(time.Millisecond), waiter.stderr.String())
			if code != 1 || !strings.Contains(waiter.stderr.String(), "no place in line for --retry 2s") {
				t.Fatalf("waiter: exit %d, stderr %q", code, waiter.stderr.String())
			}
			if d < retry/2 || d > retry+2*time.Second {
				t.Errorf("waiter gave up %v after it lost its place, want about --retry %v", d.Round(time.Millisecond), retry)
			}
		})
	}
}
