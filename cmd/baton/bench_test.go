package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestBenchMemoryJSON(t *testing.T) {
	var out, errb bytes.Buffer
	m := &Main{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := m.Run(ctx, []string{"bench", "--store", "memory://", "--workload", "floor,contended,herd",
		"--clients", "3", "--waiters", "20", "--duration", "100ms", "--json"})
	if err != nil {
		t.Fatalf("bench: %v (%s)", err, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 JSON lines, got %q", out.String())
	}
	for i, want := range []string{"floor", "contended", "herd"} {
		var r struct {
			Workload string  `json:"workload"`
			AcqPerS  float64 `json:"acq_per_s"`
		}
		if err := json.Unmarshal([]byte(lines[i]), &r); err != nil {
			t.Fatal(err)
		}
		if r.Workload != want || r.AcqPerS <= 0 {
			t.Errorf("line %d: %s", i, lines[i])
		}
	}
}

func TestBenchBadWorkload(t *testing.T) {
	var out, errb bytes.Buffer
	m := &Main{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	err := m.Run(context.Background(), []string{"bench", "--store", "memory://", "--workload", "nope"})
	if m.Exit(err) != exitUsage {
		t.Fatalf("exit %d for an unknown workload (%v)", m.Exit(err), err)
	}
}
