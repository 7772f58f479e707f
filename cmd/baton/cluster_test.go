package main

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/rediskeys"
	"github.com/batonhq/baton/internal/redistest"
)

// TestRedisClusterCLI: on a redis-cluster:// store (three masters with a
// replica each), baton lock hands the lock to its waiters in line order
// with increasing tokens, and baton status shows the holder and the line
// at their keys on the master of the name's slot, with the identities in
// the values, for names spelled x, /x, a/b and with braces; --metrics-addr
// reports the hold.
func TestRedisClusterCLI(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 1)
	e := env("BATON_STORE=" + cl.URL())
	t.Run("metrics", func(t *testing.T) {
		addr := freeAddr(t)
		holder := start(t, e, "lock", "--metrics-addr", addr, "metrics/x", "--", "sleep", "30")
		want := `baton_held{backend="redis",name="metrics/x",recipe="mutex"} 1`
		deadline := time.Now().Add(15 * time.Second)
		for {
			body := ""
			if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
				b, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				body = string(b)
			}
			if strings.Contains(body, want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s in the metrics within 15 s: %q", want, body)
			}
			<-time.After(50 * time.Millisecond) // poll interval
		}
		holder.signal(2)
		holder.wait(10 * time.Second)
	})
	for _, name := range []string{"x", "/x", "a/b", "job{7}"} {
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			holder := startHeld(t, e, "lock", "--ttl", "5s", name)
			first := start(t, e, "lock", "--ttl", "5s", name)
			waitClusterStatus(t, e, name, 1)
			second := start(t, e, "lock", "--ttl", "5s", name)
			rep := waitClusterStatus(t, e, name, 2)
			_, queue := rediskeys.ClusterKeys(name)
			master := cl.MasterOf(rediskeys.Slot(name))
			for _, en := range rep.Entries {
				want := map[string]string{"holder": name, "waiter": queue}[en.Role] + "@" + master.Addr()
				if en.Node != want {
					t.Errorf("%s node %q, want %q", en.Role, en.Node, want)
				}
				if en.Session == "" {
					t.Errorf("%s %+v: no identity read from its value", en.Role, en)
				}
			}
			holder.signal(2)
			first.waitOutput("BATON_TOKEN=", 10*time.Second)
			if strings.Contains(second.stdout.String(), "BATON_TOKEN=") {
				t.Fatal("the second waiter holds before the first")
			}
			first.signal(2)
			second.waitOutput("BATON_TOKEN=", 10*time.Second)
			second.signal(2)
			toks := []int64{tokenOf(t, holder), tokenOf(t, first), tokenOf(t, second)}
			if toks[0] >= toks[1] || toks[1] >= toks[2] {
				t.Errorf("tokens %v, want increasing", toks)
			}
			for _, p := range []*proc{holder, first, second} {
				if code := p.wait(10 * time.Second); code != 0 {
					t.Errorf("exit %d: %s", code, p.stderr.String())
				}
			}
		})
	}
}

var tokenLine = regexp.MustCompile(`BATON_TOKEN=(\d+)`)

func tokenOf(t *testing.T, p *proc) int64 {
	t.Helper()
	m := tokenLine.FindStringSubmatch(p.stdout.String())
	if m == nil {
		t.Fatalf("no token in %q", p.stdout.String())
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// waitClusterStatus polls baton status --json name until it shows one
// holder and waiters waiters (10 s at the most).
func waitClusterStatus(t *testing.T, e []string, name string, waiters int) statusReport {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, stderr, code := run(t, e, "status", "--json", name)
		if code != 0 {
			t.Fatalf("status: %d %q", code, stderr)
		}
		var rep statusReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v: %q", err, out)
		}
		if rep.Holders == 1 && rep.Waiters == waiters && len(rep.Entries) == 1+waiters {
			return rep
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never showed 1 holder and %d waiters: %q", waiters, out)
		}
		<-time.After(20 * time.Millisecond) // poll interval
	}
}

// TestRedisClusterTLSCLI: rediss-cluster:// with --tls-ca locks and reads
// status over TLS; without the CA the store is refused.
func TestRedisClusterTLSCLI(t *testing.T) {
	t.Parallel()
	cl := redistest.StartTLSCluster(t, 3, 1)
	e := env("BATON_STORE=" + cl.URL())
	if _, stderr, code := run(t, e, "lock", "--tls-ca", cl.CAFile(), "tls/x", "--", "true"); code != 0 {
		t.Fatalf("lock over TLS: exit %d: %s", code, stderr)
	}
	holder := startHeld(t, e, "lock", "--tls-ca", cl.CAFile(), "--ttl", "5s", "tls/x")
	out, stderr, code := run(t, e, "status", "--tls-ca", cl.CAFile(), "--json", "tls/x")
	if code != 0 || !strings.Contains(out, `"holders":1`) {
		t.Fatalf("status over TLS: exit %d: %s %s", code, out, stderr)
	}
	holder.signal(2)
	if code := holder.wait(10 * time.Second); code != 0 {
		t.Fatalf("holder exit %d", code)
	}
	if _, _, code := run(t, e, "lock", "--dial-timeout", "2s", "tls/x", "--", "true"); code == 0 {
		t.Fatal("lock over TLS without the CA succeeded")
	}
}
