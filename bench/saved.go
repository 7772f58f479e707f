package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/bench"
)

// runFile holds what a run was (plan, machine, notes) next to its results,
// so that the report can be rebuilt with -render.
const runFile = "bench-run.json"

type savedPlan struct {
	Duration time.Duration `json:"duration"`
	SweepDur time.Duration `json:"sweep_duration"`
	Sweep    []int         `json:"sweep"`
	Repeats  int           `json:"repeats"`
	Herd     []int         `json:"herd"`
	Stores   []string      `json:"stores"`
}

type savedRun struct {
	Plan    savedPlan `json:"plan"`
	Machine machine   `json:"machine"`
	Notes   []string  `json:"notes"`
	// Measured says, per store, when its figures were measured ("<date>
	// (load before <loadavg>)"): this run's for the stores it ran, the
	// earlier run's, carried over, for those kept with -keep.
	Measured map[string]string `json:"measured,omitempty"`
}

// when is how Measured names a run.
func (m machine) when() string { return fmt.Sprintf("%s (load before %s)", m.Date, m.LoadBefore) }

func (p plan) saved() savedPlan {
	return savedPlan{p.duration, p.sweepDur, p.sweep, p.repeats, p.herd, p.stores}
}

func saveRun(path string, r savedRun) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// render writes PERFORMANCE.md and the chart from the files a run saved in
// p.out.
func render(_ context.Context, p plan) error {
	b, err := os.ReadFile(filepath.Join(p.out, runFile))
	if err != nil {
		return err
	}
	var sr savedRun
	if err := json.Unmarshal(b, &sr); err != nil {
		return err
	}
	f, err := os.Open(filepath.Join(p.out, "bench-results.jsonl"))
	if err != nil {
		return err
	}
	defer f.Close()
	var rs []bench.Result
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r bench.Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return err
		}
		rs = append(rs, r)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	notes := sr.Notes
	if err := writeChart(filepath.Join(p.out, "bench-contenders.png"), rs); err != nil {
		notes = append(notes, fmt.Sprintf("chart: %v", err))
	}
	sp := sr.Plan
	q := plan{duration: sp.Duration, sweepDur: sp.SweepDur, sweep: sp.Sweep, repeats: sp.Repeats, herd: sp.Herd, stores: sp.Stores, out: p.out}
	return writeReport(filepath.Join(p.out, "PERFORMANCE.md"), q, sr.Machine, rs, notes)
}

// kept is what -keep carries over from the run saved in p.out.
type kept struct {
	results  []bench.Result    // of the stores this run does not measure
	stores   []string          // those stores
	notes    []string          // saying when their figures were measured
	measured map[string]string // when, per store (savedRun.Measured)
}

// keepOthers returns, with -keep, the results saved in p.out for the
// stores this run does not measure, those stores, and notes saying when
// each store's figures were measured: in the run saved, or, for stores
// that run kept in turn, in the run it names.
func (p plan) keepOthers() kept {
	if !p.keep {
		return kept{}
	}
	b, err := os.ReadFile(filepath.Join(p.out, runFile))
	if err != nil {
		return kept{}
	}
	var sr savedRun
	if json.Unmarshal(b, &sr) != nil {
		return kept{}
	}
	f, err := os.Open(filepath.Join(p.out, "bench-results.jsonl"))
	if err != nil {
		return kept{}
	}
	defer f.Close()
	now := map[string]bool{}
	for _, st := range p.stores {
		now[st] = true
	}
	var rs []bench.Result
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r bench.Result
		if json.Unmarshal(sc.Bytes(), &r) == nil && !now[r.Store] {
			rs = append(rs, r)
		}
	}
	var stores []string
	for _, st := range sr.Plan.Stores {
		if !now[st] {
			stores = append(stores, st)
		}
	}
	measured := map[string]string{}
	var whens []string // in the order of stores
	byWhen := map[string][]string{}
	for _, st := range stores {
		w := sr.Measured[st]
		if w == "" {
			w = sr.Machine.when()
		}
		measured[st] = w
		if byWhen[w] == nil {
			whens = append(whens, w)
		}
		byWhen[w] = append(byWhen[w], st)
	}
	var notes []string
	if len(stores) > 0 {
		var parts []string
		for _, w := range whens {
			parts = append(parts, fmt.Sprintf("%s: figures from the earlier run of %s", strings.Join(byWhen[w], ", "), w))
		}
		notes = append(notes, fmt.Sprintf("%s; only %s ran in this one", strings.Join(parts, "; "), strings.Join(p.stores, ", ")))
		for _, n := range sr.Notes {
			for _, st := range stores {
				if strings.HasPrefix(n, st+":") || strings.Contains(n, " on "+st) {
					notes = append(notes, n)
					break
				}
			}
		}
	}
	return kept{results: rs, stores: stores, notes: notes, measured: measured}
}
