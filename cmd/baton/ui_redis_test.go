package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/batonhq/baton/cmd/baton/internal/ui"
	"github.com/batonhq/baton/internal/redistest"
)

// TestUIRedis: on redis:// (a server without keyspace notifications: the
// page re-reads every 500 ms), redlock:// (three servers with them on)
// and redis-cluster:// (three masters and their replicas, polled)
// the page lists baton's locks under the prefix with the holder's and the
// waiters' identities in line order, the fencing token and the TTL left,
// and shows the hand-off within a second.
func TestUIRedis(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, scheme string
		servers      int
		notify       bool
		live         string
		cluster      bool
		sentinel     bool
	}{
		{"redis", "redis", 1, false, ui.LivePolling, false, false},
		{"redlock", "redlock", 3, true, ui.LiveNotifications, false, false},
		// One server: the master of the lock's slot.
		{"cluster", "redis-cluster", 1, false, ui.LivePolling, true, false},
		// One server: the master the sentinel names.
		{"sentinel", "redis-sentinel", 1, false, ui.LivePolling, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var addrs []string
			var other goredis.Cmdable
			if tc.cluster {
				cl := redistest.StartCluster(t, 3, 1)
				for _, s := range cl.Nodes {
					addrs = append(addrs, s.Addr())
				}
				cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs})
				t.Cleanup(func() { _ = cc.Close() })
				other = cc
			}
			store := ""
			if tc.sentinel {
				tp := redistest.StartSentinel(t, 1, 1)
				store = tp.URL()
				c := goredis.NewClient(&goredis.Options{Addr: tp.MasterAddr()})
				t.Cleanup(func() { _ = c.Close() })
				other = c
			}
			for _, s := range redistest.StartN(t, tc.servers*btoi(!tc.cluster && !tc.sentinel), redistest.Config{}) {
				addrs = append(addrs, s.Addr())
				if tc.notify {
					c := goredis.NewClient(&goredis.Options{Addr: s.Addr()})
					err := c.ConfigSet(context.Background(), "notify-keyspace-events", "KEA").Err()
					_ = c.Close()
					if err != nil {
						t.Fatal(err)
					}
				}
			}
			ctx := browser(t)
			if store == "" {
				store = tc.scheme + "://" + strings.Join(addrs, ",")
			}
			e := env("BATON_STORE=" + store)
			name := "uir:" + tc.name + ":job"
			holder := start(t, e, "lock", name)
			// A Redlock trusts no master up for less than a ttl (10 s by
			// default here): on masters this test just started, the first
			// lock waits that long (ttl plus the whole-second rounding of
			// the uptime Redis reports).
			holder.waitOutput("BATON_TOKEN=", 30*time.Second)
			waiter := start(t, e, "lock", name)
			// An unrelated key under the prefix is not a lock.
			if other == nil {
				c := goredis.NewClient(&goredis.Options{Addr: addrs[0]})
				t.Cleanup(func() { _ = c.Close() })
				other = c
			}
			if err := other.Set(context.Background(), "uir:"+tc.name+":other", "x", 0).Err(); err != nil {
				t.Fatal(err)
			}
			url := startUI(t, e, "--prefix", "uir:"+tc.name)
			navigate(t, ctx, url)
			// Each server's holder and line: on Redlock, three of each. The
			// rows are baton clients, told apart by their values.
			rows := func(roles ...string) string {
				var all []string
				for range tc.servers {
					all = append(all, roles...)
				}
				return strings.Join(all, ",")
			}
			waitDOM(t, ctx, redisRowsJS(name), rows("holder:baton", "waiter:baton"), 10*time.Second)
			waiterValue := domText(t, ctx, `document.querySelector("tr.waiter td:nth-child(8)").textContent`)
			if n := domText(t, ctx, `String(document.querySelectorAll(".instance").length)`); n != "1" {
				t.Fatalf("%s instances shown, want the lock alone", n)
			}
			if m := domText(t, ctx, `document.getElementById("meta").textContent`); !strings.Contains(m, "changes by "+tc.live) {
				t.Fatalf("meta %q, want live by %s", m, tc.live)
			}
			ttl := domText(t, ctx, `document.querySelector("tr.holder td:nth-child(6)").textContent`)
			tok := domText(t, ctx, `document.querySelector("tr.holder .token").textContent`)
			if !strings.HasSuffix(ttl, "s") || (tc.scheme == "redis" && tok == "0") {
				t.Fatalf("holder TTL %q token %q", ttl, tok)
			}
			holder.signal(2)
			waiter.waitOutput("BATON_TOKEN=", 10*time.Second)
			took := time.Now()
			seen := waitDOM(t, ctx, redisRowsJS(name), rows("holder:baton"), 5*time.Second)
			if v := domText(t, ctx, `document.querySelector("tr.holder td:nth-child(8)").textContent`); v != waiterValue {
				t.Fatalf("the new holder's value %q, want the waiter's %q", v, waiterValue)
			}
			lag := seen.Sub(took)
			t.Logf("the page showed the hand-off %v after the waiter printed its token", lag)
			if lag > time.Second {
				t.Fatalf("the page showed the hand-off %v after it happened", lag)
			}
			waiter.signal(2)
		})
	}
}

// redisRowsJS lists a Redis lock's rows as "role:baton" (a baton client:
// its identity from the value, or "baton client") or "role:foreign".
func redisRowsJS(name string) string {
	return fmt.Sprintf(`(() => { const b = [...document.querySelectorAll(".instance")].find(e => e.dataset.name === %q);
  if (!b) return "absent";
  return [...b.querySelectorAll("tr.entry")].map(r => r.dataset.role + ":" + (r.querySelector(".identity").textContent.startsWith("foreign") ? "foreign" : "baton")).join(",") })()`, name)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
