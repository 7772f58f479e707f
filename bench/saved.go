package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
}

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
