package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/pgtest"
)

// `baton bench` on postgres:// runs baton and the advisory-lock floor, and
// reads the server's statements per acquisition where pg_stat_statements
// is not loaded: the floor's figures are there, the statement counts left
// out (null), nothing fails.
func TestBenchPostgres(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	url := "postgres://postgres@" + srv.Addr() + "/postgres?sslmode=disable&schema=bench_cli"
	var out, errb bytes.Buffer
	m := &Main{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := m.Run(ctx, []string{"bench", "--store", url, "--workload", "floor,uncontended,contended",
		"--clients", "3", "--duration", "300ms", "--json"})
	if err != nil {
		t.Fatalf("bench: %v (%s)", err, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 JSON lines, got %q", out.String())
	}
	for i, want := range []string{"floor", "uncontended", "contended"} {
		var r struct {
			Impl         string   `json:"impl"`
			Store        string   `json:"store"`
			Workload     string   `json:"workload"`
			Acquisitions int      `json:"acquisitions"`
			Errors       int      `json:"errors"`
			Overlaps     int      `json:"overlaps"`
			Requests     *float64 `json:"server_requests_per_acq"`
		}
		if err := json.Unmarshal([]byte(lines[i]), &r); err != nil {
			t.Fatal(err)
		}
		if r.Workload != want || r.Store != "postgres" || r.Acquisitions == 0 || r.Errors != 0 || r.Overlaps != 0 || r.Requests != nil {
			t.Errorf("line %d: %s", i, lines[i])
		}
	}
}
