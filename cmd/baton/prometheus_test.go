package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/etcd"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/proxy"
	"github.com/batonhq/baton/internal/testenv"
)

// alertRules is the alert rules file docs/OBSERVABILITY.md ships.
const alertRules = "../../docs/observability/alerts.yml"

// requireProm returns the path of Debian's prometheus (or promtool); a
// missing one skips t, or fails it when CI is set (testenv.Require).
func requireProm(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	testenv.Require(t, name+" (scripts/setup.sh installs Debian's prometheus package)", err)
	return p
}

// TestAlertRulesCheck: the shipped alert rules load in Prometheus.
func TestAlertRulesCheck(t *testing.T) {
	t.Parallel()
	promtool := requireProm(t, "promtool")
	out, err := exec.Command(promtool, "check", "rules", alertRules).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SUCCESS: 4 rules found") {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// promServer is a Prometheus started by a test, scraping every second.
type promServer struct {
	addr string
}

func startProm(t *testing.T, jobs map[string][]string) *promServer {
	t.Helper()
	bin := requireProm(t, "prometheus")
	dir := t.TempDir()
	rules, err := filepath.Abs(alertRules)
	if err != nil {
		t.Fatal(err)
	}
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n  evaluation_interval: 1s\nrule_files: [%q]\nscrape_configs:\n", rules)
	for job, targets := range jobs {
		fmt.Fprintf(&cfg, "  - job_name: %s\n    static_configs:\n      - targets: [%s]\n", job, quoteAll(targets))
	}
	conf := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(conf, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &promServer{addr: freeAddr(t)}
	cmd := exec.Command(bin, "--config.file="+conf, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+p.addr, "--log.level=warn")
	log, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		_ = log.Close()
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + p.addr + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(log.Name())
			t.Fatalf("prometheus exited: %s", b)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(log.Name())
			t.Fatalf("prometheus not ready in 30s: %s", b)
		}
	}
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// sample is one element of an instant vector.
type sample struct {
	Metric map[string]string
	Value  float64
}

// query runs an instant PromQL query.
func (p *promServer) query(t *testing.T, q string) []sample {
	t.Helper()
	resp, err := http.Get("http://" + p.addr + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Status string
		Error  string
		Data   struct {
			ResultType string
			Result     []struct {
				Metric map[string]string
				Value  [2]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if r.Status != "success" {
		t.Fatalf("query %s: %s", q, r.Error)
	}
	var out []sample
	for _, e := range r.Data.Result {
		s, _ := e.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("query %s: value %v", q, e.Value)
		}
		out = append(out, sample{e.Metric, v})
	}
	return out
}

// waitQuery polls q until ok accepts its result, up to d.
func (p *promServer) waitQuery(t *testing.T, q string, d time.Duration, ok func([]sample) bool) []sample {
	t.Helper()
	var r []sample
	if !await.Within(d, func() bool { r = p.query(t, q); return ok(r) }) {
		t.Fatalf("%s: still %v after %v", q, r, d)
	}
	return r
}

// one accepts a result of one sample equal to v.
func one(v float64) func([]sample) bool {
	return func(r []sample) bool { return len(r) == 1 && r[0].Value == v }
}

type alert struct {
	Labels map[string]string
	State  string
}

func (p *promServer) alerts(t *testing.T) []alert {
	t.Helper()
	resp, err := http.Get("http://" + p.addr + "/api/v1/alerts")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct{ Data struct{ Alerts []alert } }
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	return r.Data.Alerts
}

// TestPrometheusScrapesBaton runs a real Prometheus against baton: a
// `baton lock --metrics-addr` process, three `baton elect` processes and
// this test process as a library user under contention, and checks
// through PromQL the acquisition count, plausible wait quantiles, one
// leader among three electors, and baton_lost_total rising (with the
// BatonLeaseLost alert firing) after a partition made with the TCP proxy.
func TestPrometheusScrapesBaton(t *testing.T) {
	t.Parallel()
	requireProm(t, "prometheus")
	etcdAddr := sharedEtcd(t)
	store := "etcd://" + etcdAddr
	libAddr, lockAddr := freeAddr(t), freeAddr(t)
	electAddrs := []string{freeAddr(t), freeAddr(t), freeAddr(t)}
	prom := startProm(t, map[string][]string{"lib": {libAddr}, "lock": {lockAddr}, "elect": electAddrs})

	lib, err := startMetrics(libAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lib.close)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// baton lock, holding while Prometheus scrapes it.
	e := env("BATON_STORE=" + store)
	lock := start(t, e, "lock", "--metrics-addr", lockAddr, "/prom/cli", "--", "sleep", "60")
	prom.waitQuery(t, `baton_held{job="lock",name="/prom/cli",recipe="mutex",backend="etcd"}`, 30*time.Second, one(1))
	prom.waitQuery(t, `baton_acquire_duration_seconds_count{job="lock",name="/prom/cli",outcome="acquired"}`, 10*time.Second, one(1))
	lock.signal(15)
	lock.wait(30 * time.Second)

	// Three electors: the leader gauge sums to one.
	for _, a := range electAddrs {
		start(t, e, "elect", "--metrics-addr", a, "/prom/elect", "--", "sleep", "60")
	}
	prom.waitQuery(t, `count by (name) (baton_leader{name="/prom/elect"})`, 30*time.Second, one(3))
	prom.waitQuery(t, `sum by (name) (baton_leader{name="/prom/elect"})`, 10*time.Second, one(1))

	// The library under contention: four sessions, 200 acquisitions,
	// critical sections of 0–2 ms.
	const sessions, total = 4, 200
	var done atomic.Int64
	var mu sync.Mutex
	var waits []time.Duration
	var wg sync.WaitGroup
	for range sessions {
		s, err := etcd.Open(ctx, []string{"http://" + etcdAddr}, etcd.WithTTL(5*time.Second), etcd.WithTelemetry(lib.telemetry()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close(context.Background()) })
		m := baton.NewMutex(s, "/prom/contended")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done.Load() < total && ctx.Err() == nil {
				t0 := time.Now()
				if _, err := m.Lock(ctx); err != nil {
					return
				}
				w := time.Since(t0)
				if done.Add(1) <= total {
					mu.Lock()
					waits = append(waits, w)
					mu.Unlock()
				}
				time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond) // the critical section's width
				_ = m.Unlock(ctx)
			}
		}()
	}
	wg.Wait()
	n := done.Load()
	if n < total {
		t.Fatalf("only %d acquisitions: %v", n, ctx.Err())
	}
	prom.waitQuery(t, `sum(baton_acquire_duration_seconds_count{job="lib",name="/prom/contended",outcome="acquired"})`, 10*time.Second, one(float64(n)))
	slices.Sort(waits)
	for _, q := range []float64{0.5, 0.9} {
		r := prom.query(t, fmt.Sprintf(`histogram_quantile(%g, sum by (le) (baton_acquire_duration_seconds_bucket{job="lib",name="/prom/contended",outcome="acquired"}))`, q))
		if len(r) != 1 {
			t.Fatalf("quantile %g: %v", q, r)
		}
		mine := waits[int(q*float64(len(waits)))].Seconds()
		// Prometheus interpolates inside buckets at most 2.5 times wide.
		if got := r[0].Value; got > 3*mine+0.001 || got < mine/3-0.001 {
			t.Errorf("wait p%g: Prometheus %.4fs, measured %.4fs", 100*q, got, mine)
		}
	}

	// A partition: the holder's session is lost, baton_lost_total rises
	// and the alert fires.
	px := proxy.Start(t, etcdAddr)
	s, err := etcd.Open(ctx, []string{"http://" + px.Addr()}, etcd.WithTTL(2*time.Second), etcd.WithTelemetry(lib.telemetry()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer ccancel()
		_ = s.Close(cctx)
	})
	l, err := baton.NewMutex(s, "/prom/partition").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Let Prometheus see the counter at zero first.
	prom.waitQuery(t, `baton_lost_total{job="lib",name="/prom/partition",reason="session_lost"}`, 10*time.Second, one(0))
	px.Blackhole()
	select {
	case <-l.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("lease not lost after the partition")
	}
	prom.waitQuery(t, `increase(baton_lost_total{job="lib",name="/prom/partition",reason="session_lost"}[5m]) > 0`, 15*time.Second,
		func(r []sample) bool { return len(r) == 1 })
	firing := func() bool {
		for _, a := range prom.alerts(t) {
			if a.Labels["alertname"] == "BatonLeaseLost" && a.Labels["name"] == "/prom/partition" && a.State == "firing" {
				return true
			}
		}
		return false
	}
	if !await.Within(15*time.Second, firing) {
		t.Fatalf("BatonLeaseLost not firing: %+v", prom.alerts(t))
	}
	px.Heal()

	// Every query of the Grafana dashboard runs, and the panels on what
	// this test did have data.
	for _, q := range dashboardQueries(t) {
		r := prom.query(t, q)
		if strings.Contains(q, "baton_acquire_duration_seconds_count") && len(r) == 0 {
			t.Errorf("dashboard query %s: no data", q)
		}
	}
}

// dashboardQueries returns the PromQL of every panel of the Grafana
// dashboard, its variables set to match everything.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../docs/observability/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var qs []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			qs = append(qs, strings.NewReplacer("$backend", ".*", "$name", ".*", "$__rate_interval", "1m").Replace(tg.Expr))
		}
	}
	if len(qs) < 12 {
		t.Fatalf("%d dashboard queries", len(qs))
	}
	return qs
}
