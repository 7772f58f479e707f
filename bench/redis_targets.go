package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/batonhq/baton/internal/bench"
)

// spread is one figure over the interleaved runs of a result: the median
// and the range.
type spread struct {
	med, lo, hi float64
	n           int
}

func (s spread) String() string {
	if s.n == 0 {
		return "-"
	}
	if s.n == 1 {
		return trim(s.med)
	}
	return fmt.Sprintf("%s (%s–%s)", trim(s.med), trim(s.lo), trim(s.hi))
}

func trim(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// figure collects metric over the runs of impl on st (the interleaved
// repeats when there are some, else the one result).
func figure(rs []bench.Result, impl, st, workload string, clients int, metric func(bench.Result) (float64, bool)) spread {
	var vs, single []float64
	for _, r := range rs {
		if r.Impl != impl || r.Store != st || r.Workload != workload || (clients != 0 && r.Clients != clients) {
			continue
		}
		v, ok := metric(r)
		if !ok {
			continue
		}
		if r.Repeat > 0 {
			vs = append(vs, v)
		} else {
			single = append(single, v)
		}
	}
	if len(vs) == 0 {
		vs = single
	}
	if len(vs) == 0 {
		return spread{}
	}
	slices.Sort(vs)
	return spread{med: vs[len(vs)/2], lo: vs[0], hi: vs[len(vs)-1], n: len(vs)}
}

func ptr(get func(bench.Result) *float64, scale float64) func(bench.Result) (float64, bool) {
	return func(r bench.Result) (float64, bool) {
		p := get(r)
		if p == nil {
			return 0, false
		}
		return *p * scale, true
	}
}

var (
	cmdsPerAcq = ptr(func(r bench.Result) *float64 { return r.ServerRequestsPerAcq }, 1)
	rtPerAcq   = ptr(func(r bench.Result) *float64 { return r.ServerRoundTripsPerAcq }, 1)
	cycleP50ms = ptr(func(r bench.Result) *float64 { return r.CycleP50 }, 1e-3)
	handoffP99 = ptr(func(r bench.Result) *float64 { return r.HandoffP99 }, 1e-3)
	reacqPct   = ptr(func(r bench.Result) *float64 { return r.ReacquirePct }, 1)
	fifoPct    = ptr(func(r bench.Result) *float64 { return r.FIFOPct }, 1)
	acqPerS    = func(r bench.Result) (float64, bool) { return r.AcqPerS, r.Acquisitions > 0 }
	maxOverMin = func(r bench.Result) (float64, bool) {
		if r.MinPerClient == nil || r.MaxPerClient == nil || *r.MinPerClient == 0 {
			return 0, false
		}
		return float64(*r.MaxPerClient) / float64(*r.MinPerClient), true
	}
)

// redisRow is one line of the Redis targets table.
type redisRow struct {
	target, before, baton, peer, floor, verdict string
}

// redisTargets evaluates the targets of issue 14 on redis and redlock5.
func redisTargets(rs []bench.Result) []redisRow {
	var out []redisRow
	verdict := func(ok, known bool) string {
		switch {
		case !known:
			return "not measured"
		case ok:
			return "met"
		}
		return "**missed**"
	}
	add := func(target, before string, b, q, f spread, ok bool, extra string) {
		v := verdict(ok, b.n > 0)
		if extra != "" {
			v += extra
		}
		out = append(out, redisRow{target, before, b.String(), q.String(), f.String(), v})
	}
	none := spread{}

	// Single instance, uncontended.
	st := "redis"
	bRT := figure(rs, "baton", st, "uncontended", 0, rtPerAcq)
	add("1 · uncontended: round trips per cycle ≤ 2", "2", bRT,
		figure(rs, "redsync", st, "uncontended", 0, rtPerAcq), figure(rs, "floor", st, "floor", 0, rtPerAcq),
		bRT.n > 0 && bRT.med <= 2.05, "")
	bC := figure(rs, "baton", st, "uncontended", 0, cmdsPerAcq)
	qC := figure(rs, "redsync", st, "uncontended", 0, cmdsPerAcq)
	fC := figure(rs, "fenced floor", st, "floor", 0, cmdsPerAcq)
	extra := ""
	if bC.n > 0 && qC.n > 0 && bC.med > qC.med && fC.n > 0 && bC.med <= fC.med+0.05 {
		extra = fmt.Sprintf(": at the fenced floor (%s: a fencing token costs an INCR); requests sent: see row 1", trim(fC.med))
	}
	add("2 · uncontended: server requests per cycle ≤ redsync's (commands run, scripts' included)", "20 vs 4", bC, qC,
		figure(rs, "floor", st, "floor", 0, cmdsPerAcq), bC.n > 0 && qC.n > 0 && bC.med <= qC.med, extra)
	bP := figure(rs, "baton", st, "uncontended", 0, cycleP50ms)
	fP := figure(rs, "floor", st, "floor", 0, cycleP50ms)
	ff := figure(rs, "fenced floor", st, "floor", 0, cycleP50ms)
	add(fmt.Sprintf("3 · uncontended: cycle p50 ≤ 1.1× floor, ms (ratio %s; fenced floor %s)", ratioStr(bP, fP), ff),
		"-", bP, figure(rs, "redsync", st, "uncontended", 0, cycleP50ms), fP, bP.n > 0 && fP.n > 0 && bP.med <= 1.1*fP.med, "")

	// Single instance, 8 contenders.
	bA := figure(rs, "baton", st, "contended", 8, acqPerS)
	qA := figure(rs, "redsync", st, "contended", 8, acqPerS)
	rA := figure(rs, "relay floor", st, "contended", 8, acqPerS)
	lA := figure(rs, "line floor", st, "contended", 8, acqPerS)
	dA := figure(rs, "deadline floor", st, "contended", 8, acqPerS)
	kA := figure(rs, "blocking floor", st, "contended", 8, acqPerS)
	add(fmt.Sprintf("4 · 8 contenders: acq/s ≥ 1.5× redsync's (ratio %s; floor: the line floor, a fair lock with tokens and its line on the server, %s×redsync, baton at %s of it; "+
		"the deadline floor, the line floor with entry deadlines as this issue asks, %s, %s×redsync; the blocking floor, waiters in BLPOP, %s, %s×redsync; "+
		"the relay, a hand-off by one PUBLISH with the line in process, %s, %s×redsync)",
		ratioStr(bA, qA), ratioNum(lA, qA), ratioStr(bA, lA), dA, ratioNum(dA, qA), kA, ratioNum(kA, qA), rA, ratioNum(rA, qA)), "2,472 vs 5,602", bA, qA, lA,
		bA.n > 0 && qA.n > 0 && bA.med >= 1.5*qA.med, beyondFloor(dA.n > 0 && qA.n > 0 && dA.med < 1.5*qA.med, "the deadline floor makes "+ratioNum(dA, qA)+"× itself"))
	bR := figure(rs, "baton", st, "contended", 8, reacqPct)
	bM := figure(rs, "baton", st, "contended", 8, maxOverMin)
	add(fmt.Sprintf("5 · 8 contenders: FIFO: 0%% back-to-back re-acquisition (%%), per-client max÷min ≤ 1.1 (%s)", bM), "0%", bR,
		figure(rs, "redsync", st, "contended", 8, reacqPct), none, bR.n > 0 && bR.med == 0 && bM.n > 0 && bM.med <= 1.1, "")
	bH := figure(rs, "baton", st, "contended", 8, handoffP99)
	add("6 · 8 contenders: hand-off p99 < 1 ms", "1.0 ms", bH, figure(rs, "redsync", st, "contended", 8, handoffP99), none,
		bH.n > 0 && bH.med < 1, "")
	bQ := figure(rs, "baton", st, "contended", 8, cmdsPerAcq)
	lQ := figure(rs, "line floor", st, "contended", 8, cmdsPerAcq)
	qQ := figure(rs, "redsync", st, "contended", 8, cmdsPerAcq)
	add(fmt.Sprintf("7 · 8 contenders: server requests per acquisition ≤ 2× redsync's (round trips: baton %s, redsync %s; floor: the line floor; the deadline floor %s, the blocking floor %s)",
		figure(rs, "baton", st, "contended", 8, rtPerAcq), figure(rs, "redsync", st, "contended", 8, rtPerAcq),
		figure(rs, "deadline floor", st, "contended", 8, cmdsPerAcq), figure(rs, "blocking floor", st, "contended", 8, cmdsPerAcq)),
		"42 vs 4", bQ, qQ, lQ, bQ.n > 0 && qQ.n > 0 && bQ.med <= 2*qQ.med, beyondFloor(lQ.n > 0 && qQ.n > 0 && lQ.med > 2*qQ.med, "the line floor runs "+trim(lQ.med)+" itself"))

	// Redlock ×5, uncontended.
	st = "redlock5"
	bP = figure(rs, "baton", st, "uncontended", 0, cycleP50ms)
	fP = figure(rs, "floor", st, "floor", 0, cycleP50ms)
	add(fmt.Sprintf("8 · Redlock ×5 uncontended: cycle p50 ≤ 1.1× parallel floor, ms (ratio %s)", ratioStr(bP, fP)), "1.51×", bP,
		figure(rs, "redsync", st, "uncontended", 0, cycleP50ms), fP, bP.n > 0 && fP.n > 0 && bP.med <= 1.1*fP.med, "")
	bC = figure(rs, "baton", st, "uncontended", 0, cmdsPerAcq)
	qC = figure(rs, "redsync", st, "uncontended", 0, cmdsPerAcq)
	add("9 · Redlock ×5 uncontended: server requests per cycle ≤ 1.1× redsync's", "75 vs 20", bC, qC,
		figure(rs, "floor", st, "floor", 0, cmdsPerAcq), bC.n > 0 && qC.n > 0 && bC.med <= 1.1*qC.med, "")
	bRT = figure(rs, "baton", st, "uncontended", 0, rtPerAcq)
	add("10 · Redlock ×5 uncontended: the run_id guard costs no round trip per cycle (round trips per cycle, all masters)", "-", bRT,
		figure(rs, "redsync", st, "uncontended", 0, rtPerAcq), figure(rs, "floor", st, "floor", 0, rtPerAcq),
		bRT.n > 0 && bRT.med <= 10.05, "")

	// Redlock ×5, 8 contenders.
	bA = figure(rs, "baton", st, "contended", 8, acqPerS)
	qA = figure(rs, "redsync", st, "contended", 8, acqPerS)
	rA = figure(rs, "relay floor", st, "contended", 8, acqPerS)
	lA = figure(rs, "line floor", st, "contended", 8, acqPerS)
	add(fmt.Sprintf("11 · Redlock ×5, 8 contenders: acq/s ≥ redsync's (ratio %s; floor: the Redlock line floor, a fair Redlock with its lines on the masters, %s×redsync, baton at %s of it; the relay on a majority, %s, %s×redsync)",
		ratioStr(bA, qA), ratioNum(lA, qA), ratioStr(bA, lA), rA, ratioNum(rA, qA)), "501 vs 1,679", bA, qA, lA,
		bA.n > 0 && qA.n > 0 && bA.med >= qA.med, "")
	bR = figure(rs, "baton", st, "contended", 8, reacqPct)
	add("12 · Redlock ×5, 8 contenders: same-client re-acquisition ≤ 5%", "14% vs 98%", bR,
		figure(rs, "redsync", st, "contended", 8, reacqPct), none, bR.n > 0 && bR.med <= 5, "")
	bF := figure(rs, "baton", st, "contended", 8, fifoPct)
	add(fmt.Sprintf("13 · Redlock ×5, 8 contenders: no split-vote livelock, woken in order (FIFO %%; round trips per acquisition %s)",
		figure(rs, "baton", st, "contended", 8, rtPerAcq)), "-", bF,
		figure(rs, "redsync", st, "contended", 8, fifoPct), none, bF.n > 0 && bF.med >= 95, "")
	return out
}

// ratioNum is a ÷ b without the "×".
func ratioNum(a, b spread) string {
	if a.n == 0 || b.n == 0 || b.med == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a.med/b.med)
}

func ratioStr(a, b spread) string {
	if a.n == 0 || b.n == 0 || b.med == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", a.med/b.med)
}

// writeRedisTargets writes the Redis targets table.
func writeRedisTargets(b *strings.Builder, rs []bench.Result) {
	rows := redisTargets(rs)
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "## Redis targets (issue 14)\n\n")
	fmt.Fprintf(b, "Medians of the interleaved runs (floor, fenced floor, baton, redsync, floor, …), with their range; ")
	fmt.Fprintf(b, "\"before\" is baton before the change (the issue's figures, baton vs redsync where two are given). ")
	fmt.Fprintf(b, "Server requests are the commands the servers ran, those inside scripts included (INFO commandstats); ")
	fmt.Fprintf(b, "round trips are the requests clients sent, a script counting once (the servers' total_reads_processed). ")
	fmt.Fprintf(b, "The contended floor is the *relay* (`internal/bench`'s `RedisRelay`), run in the same interleaved rounds: its line is kept in process ")
	fmt.Fprintf(b, "and a release hands over with one PUBLISH to the next waiter's channel (on every master for Redlock, the waiter holding once a majority delivered), ")
	fmt.Fprintf(b, "so it is the fastest FIFO hand-off between clients these servers allow, without a line on the server or a fencing token. ")
	fmt.Fprintf(b, "On one server the *line floor* (`RedisLineFloor`) is the least a fair lock with fencing tokens runs with its line on the server, as clients in different processes need: ")
	fmt.Fprintf(b, "one script takes the key (SET NX PX, INCR) or joins a list (RPUSH), one script releases (GETDEL, LPOP, SET and INCR for the next holder, PUBLISH to it): 9 commands per contended acquisition, ")
	fmt.Fprintf(b, "with none of what keeps a line alive through failures (entry deadlines, refreshes, the line's expiry). ")
	fmt.Fprintf(b, "The *deadline floor* (`RedisLineFloor` with `Deadlines`) is the least a lock built as this issue directs runs: the line floor whose entries carry a deadline in the server's clock, ")
	fmt.Fprintf(b, "the join reading the time (TIME) and adding the waiter to a sorted set scored by its deadline (ZADD), the release popping the first (ZPOPMIN), reading the time and skipping expired entries: 11 commands. ")
	fmt.Fprintf(b, "The *blocking floor* (`RedisBlockingFloor`) keeps no line at all: waiters block in BLPOP on the lock's wake list, Redis serving them in the order they blocked, ")
	fmt.Fprintf(b, "and a release pushes a fresh grant (GETDEL, INCR, SET, RPUSH): 8 commands, but nothing can skip a stuck waiter, list the waiters or name the holder. ")
	fmt.Fprintf(b, "On five masters the *Redlock line floor* (`RedlockLineFloor`) is the same for Redlock: one script per master takes the key (SET NX PX) or joins a line by the waiter's ticket (ZADD), one releases (GET, DEL, or ZPOPMIN, SET, PUBLISH to the next), the waiter holding once a majority took or handed it the key: ")
	fmt.Fprintf(b, "10 requests and 5 hand-off messages per contended acquisition, as baton's Redlock, without entry deadlines, refreshes, validity or the restart guard.\n\n")
	fmt.Fprintf(b, "| target | before | baton | redsync | floor | verdict |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", r.target, r.before, r.baton, r.peer, r.floor, r.verdict)
	}
	fmt.Fprintf(b, "\n")
}

// beyondFloor is the verdict's addition for a target that even its floor,
// measured in the same rounds, misses.
func beyondFloor(missed bool, why string) string {
	if !missed {
		return ""
	}
	return ", beyond the floor: " + why
}
