package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/bench"
)

func fp(v float64) *float64 { return &v }

func TestReportAndChart(t *testing.T) {
	var rs []bench.Result
	for _, n := range []int{2, 8, 64} {
		rs = append(rs,
			bench.Result{Impl: "baton", Store: "zk", Workload: "contended", Clients: n, AcqPerS: 2000 / float64(n), WaitP99: fp(1000 * float64(n)), ServerRequestsPerAcq: fp(5)},
			bench.Result{Impl: "go-zookeeper", Store: "zk", Workload: "contended", Clients: n, AcqPerS: 1000 / float64(n), WaitP99: fp(2000 * float64(n)), ServerRequestsPerAcq: fp(5.2)})
	}
	rs = append(rs,
		bench.Result{Impl: "floor", Store: "zk", Workload: "floor", Clients: 1, CycleP50: fp(100)},
		bench.Result{Impl: "baton", Store: "zk", Workload: "uncontended", Clients: 1, CycleP50: fp(104)},
		bench.Result{Impl: "baton", Store: "zk", Workload: "herd", Clients: 1000, FiresPerRelease: fp(1)})
	dir := t.TempDir()
	if err := writeChart(filepath.Join(dir, "c.png"), rs); err != nil {
		t.Fatal(err)
	}
	p := plan{duration: 1, sweep: []int{2, 8, 64}, repeats: 1, herd: []int{1000}, stores: []string{"zk"}}
	if err := writeReport(filepath.Join(dir, "P.md"), p, describeMachine(), rs, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "P.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| zk | acq/s ≥ 1.3× go-zookeeper (8 contenders) | 2.00× (250 vs 125) | met |",
		"| zk | uncontended cycle p50 ≤ 1.05× floor | 1.04×", "| zk | exactly 1.0 notification per release, 1,000 waiters | 1.000 | met |",
		"nproc"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("report lacks %q:\n%s", want, b)
		}
	}
}
