package main

import (
	"fmt"
	"strings"

	"github.com/batonhq/baton/internal/bench"
)

// writeSentinelRows writes the Sentinel table (issue 29): baton on a
// redis-sentinel:// store, without and with --replicas 2, redsync on the
// same master, and the floors, in the same interleaved rounds.
func writeSentinelRows(b *strings.Builder, rs []bench.Result) {
	const st = "sentinel"
	bA := figure(rs, "baton", st, "contended", 8, acqPerS)
	if bA.n == 0 {
		return
	}
	kA := figure(rs, ackImpl, st, "contended", 8, acqPerS)
	qA := figure(rs, "redsync", st, "contended", 8, acqPerS)
	bF := figure(rs, "baton", st, "contended", 8, fifoPct)
	kF := figure(rs, ackImpl, st, "contended", 8, fifoPct)
	verdict := "**missed**"
	if qA.n > 0 && bA.med >= qA.med && bF.n > 0 && bF.med >= 99 {
		verdict = "met"
	}
	fmt.Fprintf(b, "## Redis Sentinel (issue 29)\n\n")
	fmt.Fprintf(b, "One master, %d replicas and three sentinels (`redis-sentinel://`); redsync runs on the same master. ", sentinelReplicas)
	fmt.Fprintf(b, "`%s` is baton with `redis.WithReplicas(2)`: every grant, hand-off and renewal counts once `WAIT 2` says both replicas have it. ", ackImpl)
	fmt.Fprintf(b, "The floors: `SET NX PX` + `GETDEL` script (floor), and the same with `WAIT 2` pipelined after the `SET` (the %s). ", waitFloorImpl)
	fmt.Fprintf(b, "Medians of the interleaved runs, with their range.\n\n")
	fmt.Fprintf(b, "| measure | baton | %s | redsync | floor | %s | verdict |\n|---|---|---|---|---|---|---|\n", ackImpl, waitFloorImpl)
	row := func(what string, f func(impl, workload string) spread, verdict string) {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", what, f("baton", ""), f(ackImpl, ""), f("redsync", ""), f("floor", "floor"), f(waitFloorImpl, "floor"), verdict)
	}
	contended := func(m func(bench.Result) (float64, bool)) func(string, string) spread {
		return func(impl, w string) spread {
			if w == "floor" {
				return spread{}
			}
			return figure(rs, impl, st, "contended", 8, m)
		}
	}
	uncontended := func(m func(bench.Result) (float64, bool)) func(string, string) spread {
		return func(impl, w string) spread {
			if w == "" {
				w = "uncontended"
			}
			return figure(rs, impl, st, w, 0, m)
		}
	}
	row(fmt.Sprintf("8 contenders: acq/s ≥ 1.0× redsync without acknowledgement, FIFO kept (ratio %s; with --replicas 2 %s of baton's, %s redsync's)",
		ratioStr(bA, qA), ratioStr(kA, bA), ratioStr(kA, qA)), contended(acqPerS), verdict)
	row(fmt.Sprintf("8 contenders: FIFO %% (baton %s, with --replicas 2 %s)", bF, kF), contended(fifoPct), "-")
	row("8 contenders: hand-off p99, ms", contended(handoffP99), "-")
	row("8 contenders: round trips per acquisition", contended(rtPerAcq), "-")
	bP := figure(rs, "baton", st, "uncontended", 0, cycleP50ms)
	kP := figure(rs, ackImpl, st, "uncontended", 0, cycleP50ms)
	fP := figure(rs, "floor", st, "floor", 0, cycleP50ms)
	wP := figure(rs, waitFloorImpl, st, "floor", 0, cycleP50ms)
	row(fmt.Sprintf("uncontended: cycle p50, ms (--replicas 2 costs %s of baton's; the WAIT floor %s of the floor; baton --replicas 2 is %s of the WAIT floor)",
		ratioStr(kP, bP), ratioStr(wP, fP), ratioStr(kP, wP)), uncontended(cycleP50ms), "-")
	row("uncontended: round trips per cycle", uncontended(rtPerAcq), "-")
	fmt.Fprintf(b, "\n")
}
