package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/proctest"
)

// gateway is a plain HTTP/JSON client of etcd's gateway on `baton serve`
// (what curl or Python's urllib would send).
type gateway struct {
	t    *testing.T
	base string
	c    http.Client
}

// post sends body as JSON to path and decodes the JSON answer.
func (g *gateway) post(path string, body any) map[string]any {
	g.t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		g.t.Fatal(err)
	}
	resp, err := g.c.Post(g.base+path, "application/json", bytes.NewReader(b))
	if err != nil {
		g.t.Errorf("POST %s: %v", path, err)
		return nil
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		g.t.Errorf("POST %s %s: status %d, %v, %v", path, b, resp.StatusCode, out, err)
		return nil
	}
	return out
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// num reads a JSON number the gateway sends as a string (int64s are).
func num(t *testing.T, v any) int64 {
	t.Helper()
	s, _ := v.(string)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Errorf("not an int64 string: %v", v)
	}
	return n
}

// grant grants a lease of ttl seconds and returns its ID as the gateway
// writes it.
func (g *gateway) grant(ttl int) string {
	g.t.Helper()
	r := g.post("/v3/lease/grant", map[string]any{"TTL": ttl})
	id, _ := r["ID"].(string)
	if id == "" {
		g.t.Fatalf("lease grant: %v", r)
	}
	return id
}

// createRev reads the create revision of key (base64), the fencing token.
func (g *gateway) createRev(key string) int64 {
	g.t.Helper()
	r := g.post("/v3/kv/range", map[string]any{"key": key})
	kvs, _ := r["kvs"].([]any)
	if len(kvs) != 1 {
		g.t.Fatalf("range %s: %v", key, r)
	}
	return num(g.t, kvs[0].(map[string]any)["create_revision"])
}

// TestServeGatewayLock: HTTP clients taking a lock through etcd's v3lock
// gateway on `baton serve` and `baton lock` processes on the same name
// take turns: 0 overlaps in a shared log, and the fencing tokens of all
// the sections (the create revision of the HTTP clients' keys, baton's
// BATON_TOKEN) rise in one sequence. baton status shows an HTTP holder
// with its key's create revision as its token.
func TestServeGatewayLock(t *testing.T) {
	t.Parallel()
	srv, addr := startServe(t, t.TempDir())
	defer stopServe(t, srv)
	g := &gateway{t: t, base: "http://" + addr, c: http.Client{Timeout: 60 * time.Second}}
	const name = "/gw-lock"
	store := "etcd://" + addr

	// One HTTP holder, seen by baton status.
	lease := g.grant(10)
	r := g.post("/v3/lock/lock", map[string]any{"name": b64(name), "lease": lease})
	key, _ := r["key"].(string)
	tok := g.createRev(key)
	out, stderr, code := run(t, env(), "status", "--store", store, "--json", name)
	var st struct {
		Holders int `json:"holders"`
		Nodes   []struct {
			Role  string `json:"role"`
			Token int64  `json:"token"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != 0 {
		t.Fatalf("status: exit %d, %q, %q, %v", code, out, stderr, err)
	}
	if st.Holders != 1 || st.Nodes[0].Role != "holder" || st.Nodes[0].Token != tok {
		t.Fatalf("status of an HTTP holder with token %d: %s", tok, out)
	}
	g.post("/v3/lock/unlock", map[string]any{"key": key})

	// Contention: 3 HTTP clients and 2 baton lock loops, one log.
	log := filepath.Join(t.TempDir(), "log")
	var mu sync.Mutex // serialises the test's own appends, not the sections
	appendLine := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		fmt.Fprintln(f, s)
	}
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lease := g.grant(10)
			for range 4 {
				r := g.post("/v3/lock/lock", map[string]any{"name": b64(name), "lease": lease})
				key, _ := r["key"].(string)
				if key == "" {
					return
				}
				tok := g.createRev(key)
				appendLine(fmt.Sprintf("in %d http%d", tok, w))
				time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond) // the section's width
				appendLine(fmt.Sprintf("out %d http%d", tok, w))
				g.post("/v3/lock/unlock", map[string]any{"key": key})
			}
			g.post("/v3/lease/revoke", map[string]any{"ID": lease})
		}()
	}
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sh := fmt.Sprintf(`echo "in $BATON_TOKEN baton%d" >> %s; sleep 0.002; echo "out $BATON_TOKEN baton%d" >> %s`, w, log, w, log)
			for range 3 {
				if out, stderr, code := run(t, env(), "lock", "--store", store, name, "--", "sh", "-c", sh); code != 0 {
					t.Errorf("baton lock: exit %d, %q, %q", code, out, stderr)
				}
			}
		}()
	}
	wg.Wait()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2*(3*4+2*3) {
		t.Fatalf("%d lines in the log, want %d:\n%s", len(lines), 2*(3*4+2*3), b)
	}
	last := int64(0)
	for i := 0; i+1 < len(lines); i += 2 {
		in, outl := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if in[0] != "in" || outl[0] != "out" || in[1] != outl[1] || in[2] != outl[2] {
			t.Fatalf("overlap at line %d:\n%s", i+1, b)
		}
		tok, _ := strconv.ParseInt(in[1], 10, 64)
		if tok <= last {
			t.Fatalf("token %d after %d at line %d:\n%s", tok, last, i+1, b)
		}
		last = tok
	}
	t.Logf("%d sections, no overlap, tokens rising to %d", len(lines)/2, last)
}

// TestServeGatewayElect: a candidate leading through etcd's v3election
// gateway and `baton elect` on the same name: one leader at a time
// (baton elect waits, its command not run, until the HTTP leader
// resigns), and the leader's rev the gateway reports is baton's
// BATON_TOKEN.
func TestServeGatewayElect(t *testing.T) {
	t.Parallel()
	srv, addr := startServe(t, t.TempDir())
	defer stopServe(t, srv)
	g := &gateway{t: t, base: "http://" + addr, c: http.Client{Timeout: 60 * time.Second}}
	const name = "/gw-elect"
	store := "etcd://" + addr
	lease := g.grant(60) // outlives the test: no keepalive needed
	r := g.post("/v3/election/campaign", map[string]any{"name": b64(name), "lease": lease, "value": b64("http")})
	leader, _ := r["leader"].(map[string]any)
	if leader == nil {
		t.Fatalf("campaign: %v", r)
	}
	httpRev := num(t, leader["rev"])

	dir := t.TempDir()
	tokFile, doneFile := filepath.Join(dir, "token"), filepath.Join(dir, "done")
	sh := fmt.Sprintf(`echo $BATON_TOKEN > %s; while [ ! -e %s ]; do sleep 0.01; done`, tokFile, doneFile)
	el := start(t, env(), "elect", "--store", store, name, "--value", "baton", "--", "sh", "-c", sh)
	// baton elect queues behind the HTTP leader (its node is the second
	// under the name) and does not run its command.
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _, _ := run(t, env(), "status", "--store", store, "--json", name)
		var st struct {
			Nodes []json.RawMessage `json:"nodes"`
		}
		if json.Unmarshal([]byte(out), &st) == nil && len(st.Nodes) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("baton elect never queued: %s", out)
		}
	}
	if _, err := os.Stat(tokFile); err == nil {
		t.Fatal("baton elect ran its command while the HTTP candidate leads")
	}
	lr := g.post("/v3/election/leader", map[string]any{"name": b64(name)})
	if kv, _ := lr["kv"].(map[string]any); kv == nil || kv["value"] != b64("http") {
		t.Fatalf("leader while HTTP leads: %v", lr)
	}
	g.post("/v3/election/resign", map[string]any{"leader": leader})
	b := []byte(proctest.WaitFile(t, tokFile, "\n", 30*time.Second))
	batonTok, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	lr = g.post("/v3/election/leader", map[string]any{"name": b64(name)})
	kv, _ := lr["kv"].(map[string]any)
	if kv == nil || kv["value"] != b64("baton") || num(t, kv["create_revision"]) != batonTok || batonTok <= httpRev {
		t.Fatalf("leader after the HTTP leader resigned: %v; BATON_TOKEN %d, HTTP leader's rev %d", lr, batonTok, httpRev)
	}
	if err := os.WriteFile(doneFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code := el.wait(30 * time.Second); code != 0 {
		t.Fatalf("baton elect: exit %d, %q", code, el.stderr.String())
	}
	t.Logf("HTTP leader rev %d, then baton elect with BATON_TOKEN %d = the gateway's create_revision", httpRev, batonTok)
}
