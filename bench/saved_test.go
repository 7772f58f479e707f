package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/bench"
)

// TestKeepDatesEachStore: a -keep run dates each kept store by the run
// that measured it, also when the saved run had itself kept it from an
// earlier one, and not by the saved run's date alone.
func TestKeepDatesEachStore(t *testing.T) {
	dir := t.TempDir()
	saved := savedRun{
		Plan:     savedPlan{Stores: []string{"zk", "etcd", "redis"}},
		Machine:  machine{Date: "2026-11-24 13:06 UTC", LoadBefore: "7.76"},
		Measured: map[string]string{"zk": "2026-11-22 09:07 UTC (load before 2.18)", "redis": "2026-11-24 13:06 UTC (load before 7.76)"},
	}
	if err := saveRun(filepath.Join(dir, runFile), saved); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "bench-results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []string{"zk", "etcd", "redis"} {
		if err := (bench.Result{Impl: "baton", Store: st, Workload: "floor", Clients: 1}).WriteJSON(f); err != nil {
			t.Fatal(err)
		}
	}
	_ = f.Close()

	k := plan{keep: true, out: dir, stores: []string{"redis"}}.keepOthers()
	if strings.Join(k.stores, ",") != "zk,etcd" || len(k.results) != 2 {
		t.Fatalf("kept stores %v, %d results; want zk,etcd and 2", k.stores, len(k.results))
	}
	// etcd has no date of its own in the saved run (saved before dates
	// were kept per store): the saved run's date stands for it.
	want := "zk: figures from the earlier run of 2026-11-22 09:07 UTC (load before 2.18); " +
		"etcd: figures from the earlier run of 2026-11-24 13:06 UTC (load before 7.76); only redis ran in this one"
	if len(k.notes) == 0 || k.notes[0] != want {
		t.Fatalf("notes %q, want first %q", k.notes, want)
	}
	if k.measured["zk"] != saved.Measured["zk"] || k.measured["etcd"] != saved.Machine.when() {
		t.Fatalf("measured %v", k.measured)
	}
}
