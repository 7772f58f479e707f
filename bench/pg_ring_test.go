package main

import (
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/bench"
)

// pgContended returns the three repeats of one implementation at 8
// contenders on postgres, at acq/s and hand-off p99s (µs) around those
// given.
func pgContended(impl string, acq, p99, sentP99 float64) []bench.Result {
	var rs []bench.Result
	for i, d := range []float64{-1, 0, 1} {
		r := bench.Result{Impl: impl, Store: "postgres", Workload: "contended", Clients: 8, Repeat: i + 1,
			Acquisitions: 1000, AcqPerS: acq + d, HandoffP50: fp(p99 / 2), HandoffP99: fp(p99)}
		if sentP99 > 0 {
			r.HandoffSentP50, r.HandoffSentP99 = fp(sentP99/2), fp(sentP99)
		}
		rs = append(rs, r)
	}
	return rs
}

func TestPgTargetsNotifyRing(t *testing.T) {
	rs := append(pgContended("floor", 5000, 100, 200), pgContended("baton", 280, 4000, 6000)...)
	rs = append(rs, pgContended(notifyRing, 1000, 1000, 3000)...)
	rs = append(rs, pgContended(notifyRingAsync, 2000, 500, 1000)...)
	rows := pgTargets(rs, "postgres")
	for _, want := range []string{"the notify ring floor: 1000 (999–1001) acq/s = 0.20× the advisory floor's, baton at 0.28× of it",
		"the same ring with synchronous_commit off, its releases not waiting for the WAL flush: 2000 (1999–2001) acq/s = 0.40× the advisory floor's"} {
		if !strings.Contains(rows[0].target, want) {
			t.Errorf("target 1 lacks %q: %s", want, rows[0].target)
		}
	}
	if want := "**missed**: the target lies beyond the physical limit here, the fastest ring floor (notify ring floor, async commit) reaching only 0.40× the advisory floor's"; rows[0].verdict != want {
		t.Errorf("target 1 verdict = %q, want %q", rows[0].verdict, want)
	}
	for _, want := range []string{"the notify ring floor, the physical limit of a LISTEN/NOTIFY hand-off: p50 0.50 (0.50–0.50), p99 1.00 (1.00–1.00)",
		"from the release sent, p50 / p99: baton 3.00 (3.00–3.00) / 6.00 (6.00–6.00), floor 0.10 (0.10–0.10) / 0.20 (0.20–0.20), notify ring floor 1.50 (1.50–1.50) / 3.00 (3.00–3.00), notify ring floor, async commit 0.50 (0.50–0.50) / 1.00 (1.00–1.00)"} {
		if !strings.Contains(rows[2].target, want) {
			t.Errorf("target 3 lacks %q: %s", want, rows[2].target)
		}
	}

	// With the wake rings, the fastest ring below half the floor is the
	// limit the verdict gives.
	rs = append(rs, pgContended(wakeRing, 1800, 300, 0)...)
	rs = append(rs, pgContended(wakeRingAsync, 2400, 300, 0)...)
	rows = pgTargets(rs, "postgres")
	for _, want := range []string{"the wake ring floor, waiters woken inside the server with no notification, the physical limit of any hand-off that writes a row: 1800 (1799–1801) acq/s = 0.36× the advisory floor's, and with synchronous_commit off 2400 (2399–2401) = 0.48×"} {
		if !strings.Contains(rows[0].target, want) {
			t.Errorf("target 1 lacks %q: %s", want, rows[0].target)
		}
	}
	if want := "**missed**: the target lies beyond the physical limit here, the fastest ring floor (wake ring floor, async commit) reaching only 0.48× the advisory floor's"; rows[0].verdict != want {
		t.Errorf("target 1 verdict = %q, want %q", rows[0].verdict, want)
	}

	// The ring at or above half the floor: the target is missed by baton
	// alone, and the verdict says nothing of the ring.
	rs = append(pgContended("floor", 5000, 100, 0), pgContended("baton", 280, 4000, 0)...)
	rs = append(rs, pgContended(notifyRing, 3000, 1000, 0)...)
	if v := pgTargets(rs, "postgres")[0].verdict; v != "**missed**" {
		t.Errorf("target 1 verdict with the ring above half the floor = %q", v)
	}
}

// Results saved before the ring was measured render without it.
func TestPgTargetsWithoutRing(t *testing.T) {
	rs := append(pgContended("floor", 5000, 100, 0), pgContended("baton", 280, 4000, 0)...)
	rows := pgTargets(rs, "postgres")
	if strings.Contains(rows[0].target, "ring") || strings.Contains(rows[2].target, "ring") || strings.Contains(rows[2].target, "sent") {
		t.Errorf("rows name what was not measured:\n%s\n%s", rows[0].target, rows[2].target)
	}
	if rows[0].verdict != "**missed**" {
		t.Errorf("target 1 verdict = %q", rows[0].verdict)
	}
}

// The notify ring is described where the results have it, and only there.
func TestPgTargetsRingProse(t *testing.T) {
	rs := append(pgContended("floor", 5000, 100, 0), bench.Result{Impl: "floor", Store: "postgres", Workload: "floor", Clients: 1, CycleP50: fp(100)})
	for _, ring := range []bool{false, true} {
		if ring {
			rs = append(rs, pgContended(notifyRing, 1000, 1000, 0)...)
		}
		var b strings.Builder
		writePgTargets(&b, rs)
		if got := strings.Contains(b.String(), "The *notify ring floor* (`PostgresNotifyRing`"); got != ring {
			t.Errorf("with the ring %v, the prose describes it: %v", ring, got)
		}
	}
}
