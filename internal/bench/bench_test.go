package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/memory"
)

func memTarget() Target {
	st := memory.New()
	return Target{Impl: "baton", Store: "memory", Factory: SessionFactory(func(ctx context.Context) (*baton.Session, error) {
		return st.Open(ctx)
	})}
}

func TestWorkloadsOnMemory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, cfg := range []Config{
		{Workload: "uncontended", Duration: 100 * time.Millisecond},
		{Workload: "contended", Clients: 4, Duration: 200 * time.Millisecond},
		{Workload: "many", Clients: 3, Locks: 4, Duration: 200 * time.Millisecond},
		{Workload: "herd", Clients: 50},
		{Workload: "footprint", Clients: 100},
	} {
		t.Run(cfg.Workload, func(t *testing.T) {
			r, err := Run(ctx, memTarget(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if r.Acquisitions == 0 || r.Errors != 0 || r.Overlaps != 0 {
				t.Fatalf("acquisitions %d, errors %d, overlaps %d", r.Acquisitions, r.Errors, r.Overlaps)
			}
			var buf bytes.Buffer
			if err := r.WriteJSON(&buf); err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"impl", "store", "workload", "clients", "acq_per_s", "wait_p50_us", "wait_p99_us",
				"handoff_p50_us", "handoff_p99_us", "fires_per_release", "reacquire_pct", "server_requests_per_acq"} {
				if _, ok := m[k]; !ok {
					t.Errorf("JSON lacks %q: %s", k, buf.String())
				}
			}
			switch cfg.Workload {
			case "herd":
				if r.FiresPerRelease == nil || *r.FiresPerRelease != 1 {
					t.Errorf("fires per release = %v, want 1 (herd-free)", r.FiresPerRelease)
				}
				if r.Acquisitions != cfg.Clients {
					t.Errorf("acquisitions = %d, want %d", r.Acquisitions, cfg.Clients)
				}
			case "contended":
				if r.MinPerClient == nil || *r.MinPerClient == 0 {
					t.Errorf("a client never acquired: %+v", r)
				}
			case "footprint":
				if r.RSSMB == nil {
					t.Error("no RSS")
				}
			}
			var tb strings.Builder
			if err := WriteTable(&tb, []Result{r}); err != nil || !strings.Contains(tb.String(), cfg.Workload) {
				t.Errorf("table: %v\n%s", err, tb.String())
			}
		})
	}
}

func TestUnknownWorkload(t *testing.T) {
	if _, err := Run(context.Background(), memTarget(), Config{Workload: "nope"}); err == nil {
		t.Fatal("no error for an unknown workload")
	}
}

func TestFIFO(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(0, int64(ms)*int64(time.Millisecond)) }
	// Client 1 asked at 0 and was still waiting when client 0 (asked at 1) got it.
	cs := []cycle{
		{client: 0, order: 1, req: at(3), acq: at(4)},
		{client: 1, order: 2, req: at(0), acq: at(5)},
	}
	if got := *fifo(cs, nil, 2); got != 50 {
		t.Fatalf("fifo = %v, want 50", got)
	}
	// Client 1 asked at 0 and never got the lock while client 0 cycled.
	starved := []cycle{{client: 0, order: 1, req: at(3), acq: at(4)}, {client: 0, order: 2, req: at(5), acq: at(6)}}
	if got := *fifo(starved, []cycle{{client: 1, req: at(0)}}, 2); got != 0 {
		t.Fatalf("fifo with a starved client = %v, want 0", got)
	}
}

// TestTelemetryCostOnMemory: the three arms run in the same rounds and
// each reports its cycles.
func TestTelemetryCostOnMemory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	arms := BaseArms()
	rs, err := TelemetryCost(ctx, memTarget(), Config{Workload: "telemetry", Duration: 300 * time.Millisecond, Rounds: 3}, arms)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != len(arms) {
		t.Fatalf("%d results, want %d", len(rs), len(arms))
	}
	for i, r := range rs {
		if r.Impl != "baton+telemetry="+arms[i].Name || r.Acquisitions == 0 || r.Errors != 0 || r.CycleP50 == nil {
			t.Errorf("result %d: %+v", i, r)
		}
		if !strings.Contains(r.Note, "over 3 interleaved rounds") {
			t.Errorf("note %q", r.Note)
		}
	}
}
