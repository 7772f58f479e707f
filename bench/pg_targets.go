package main

import (
	"fmt"
	"strings"

	"github.com/batonhq/baton/internal/bench"
)

// pgStores are the PostgreSQL stores the bench runs: the server's
// defaults (fsync on), and fsync off.
var pgStores = []string{"postgres", "postgres-nofsync"}

var (
	srvUsPerAcq = ptr(func(r bench.Result) *float64 { return r.ServerUsPerAcq }, 1)
	handoffP50  = ptr(func(r bench.Result) *float64 { return r.HandoffP50 }, 1e-3)
	firesPerRel = ptr(func(r bench.Result) *float64 { return r.FiresPerRelease }, 1)
	serverFires = ptr(func(r bench.Result) *float64 { return r.ServerFiresPerRelease }, 1)
)

// pgTargets evaluates the targets of issue 30 on st: each row's baton,
// peer and floor figures are medians of the same interleaved rounds.
func pgTargets(rs []bench.Result, st string) []redisRow {
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
	add := func(target string, b, q, f spread, ok bool) {
		out = append(out, redisRow{target, "-", b.String(), q.String(), f.String(), verdict(ok, b.n > 0)})
	}
	const peer = "pglock-style"

	bA := figure(rs, "baton", st, "contended", 8, acqPerS)
	fA := figure(rs, "floor", st, "contended", 8, acqPerS)
	ok1 := bA.n > 0 && fA.n > 0 && bA.med >= 0.5*fA.med
	add(fmt.Sprintf("1 · 8 contenders: acq/s ≥ 0.5× the advisory-lock floor's (ratio %s%s)", ratioStr(bA, fA), ringAcqNote(rs, st, bA, fA)),
		bA, figure(rs, peer, st, "contended", 8, acqPerS), fA, ok1)
	if !ok1 && bA.n > 0 {
		out[len(out)-1].verdict += ringAcqVerdict(rs, st, fA)
	}
	bF := figure(rs, "baton", st, "contended", 8, fifoPct)
	bR := figure(rs, "baton", st, "contended", 8, reacqPct)
	add(fmt.Sprintf("2 · 8 contenders: FIFO kept (FIFO %%; back-to-back re-acquisition %%: baton %s, pglock-style %s, floor %s)",
		bR, figure(rs, peer, st, "contended", 8, reacqPct), figure(rs, "floor", st, "contended", 8, reacqPct)),
		bF, figure(rs, peer, st, "contended", 8, fifoPct), figure(rs, "floor", st, "contended", 8, fifoPct),
		bF.n > 0 && bF.med >= 95 && bR.n > 0 && bR.med < 1)
	bH := figure(rs, "baton", st, "contended", 8, handoffP99)
	add(fmt.Sprintf("3 · 8 contenders: hand-off p99 < 5 ms (p50: baton %s, floor %s%s)",
		figure(rs, "baton", st, "contended", 8, handoffP50), figure(rs, "floor", st, "contended", 8, handoffP50), ringHandoffNote(rs, st)+sentHandoffNote(rs, st)),
		bH, figure(rs, peer, st, "contended", 8, handoffP99), figure(rs, "floor", st, "contended", 8, handoffP99),
		bH.n > 0 && bH.med < 5)
	bP := figure(rs, "baton", st, "uncontended", 0, cycleP50ms)
	fP := figure(rs, "floor", st, "floor", 0, cycleP50ms)
	rP := figure(rs, rowFloor, st, "floor", 0, cycleP50ms)
	asyncNote := ""
	if aP := figure(rs, rowFloorAsync, st, "floor", 0, cycleP50ms); aP.n > 0 {
		asyncNote = fmt.Sprintf("; with synchronous_commit off: %s = %s the floor's", aP, ratioStr(aP, fP))
	}
	add(fmt.Sprintf("4 · uncontended: cycle p50 ≤ 2× the floor's, ms (ratio %s; the row floor, a row inserted and deleted, each committed: %s = %s the floor's, baton at %s of it%s)",
		ratioStr(bP, fP), rP, ratioStr(rP, fP), ratioStr(bP, rP), asyncNote),
		bP, figure(rs, peer, st, "uncontended", 0, cycleP50ms), fP, bP.n > 0 && fP.n > 0 && bP.med <= 2*fP.med)
	// The sessions count the notifications that woke one of their waits
	// and came from another session; the server counts every NOTIFY sent.
	bW := figure(rs, "baton", st, "herd", 1000, firesPerRel)
	bN := figure(rs, "baton", st, "herd", 1000, serverFires)
	row5 := redisRow{fmt.Sprintf("5 · 1,000 waiters: notifications per release = 1.0 (waiters woken per release, by the sessions' count; the server's count of NOTIFYs sent, each to one session: %s)", bN),
		"-", bW.String(), "-", "-", verdict(bW.n > 0 && bW.med <= 1.0005, bW.n > 0)}
	if bW.n > 0 && bW.med <= 1.0005 && bN.n > 0 && bN.med > 1.0005 {
		row5.verdict += fmt.Sprintf(": one waiter woken per release; the server's %s includes NOTIFYs to the releasing holder itself, whose watch on its own node (its loss signal) was set as it released, which wake nobody", bN)
	}
	out = append(out, row5)
	// Where the time goes: statements the server ran, and its time
	// running them, per acquisition.
	out = append(out, redisRow{
		"· statements per acquisition, uncontended / 8 contenders (pg_stat_statements calls)", "-",
		figure(rs, "baton", st, "uncontended", 0, cmdsPerAcq).String() + " / " + figure(rs, "baton", st, "contended", 8, cmdsPerAcq).String(),
		figure(rs, peer, st, "uncontended", 0, cmdsPerAcq).String() + " / " + figure(rs, peer, st, "contended", 8, cmdsPerAcq).String(),
		figure(rs, "floor", st, "floor", 0, cmdsPerAcq).String() + " / " + figure(rs, "floor", st, "contended", 8, cmdsPerAcq).String(), "-"})
	out = append(out, redisRow{
		"· server time per acquisition, µs, uncontended / 8 contenders (pg_stat_statements total_exec_time; the floor's includes its waits in pg_advisory_lock)", "-",
		figure(rs, "baton", st, "uncontended", 0, srvUsPerAcq).String() + " / " + figure(rs, "baton", st, "contended", 8, srvUsPerAcq).String(),
		figure(rs, peer, st, "uncontended", 0, srvUsPerAcq).String() + " / " + figure(rs, peer, st, "contended", 8, srvUsPerAcq).String(),
		figure(rs, "floor", st, "floor", 0, srvUsPerAcq).String() + " / " + figure(rs, "floor", st, "contended", 8, srvUsPerAcq).String(), "-"})
	return out
}

// writePgTargets writes the PostgreSQL targets tables, one per store run.
func writePgTargets(b *strings.Builder, rs []bench.Result) {
	var stores []string
	for _, st := range pgStores {
		if find(rs, "floor", st, "floor", 0) != nil {
			stores = append(stores, st)
		}
	}
	if len(stores) == 0 {
		return
	}
	fmt.Fprintf(b, "## PostgreSQL targets (issue 30)\n\n")
	fmt.Fprintf(b, "Medians of the interleaved runs (floor, baton, pglock-style, floor, …; with the notify ring floors after the floor at 8 contenders where they ran), with their range. ")
	fmt.Fprintf(b, "The *floor* is a session advisory lock, `SELECT pg_advisory_lock(k)` and `SELECT pg_advisory_unlock(k)` with pgx, one connection per client (`internal/bench`'s `PostgresFloor`): ")
	fmt.Fprintf(b, "contended, the waiters block inside the server and its lock manager hands the lock over without a round trip to any client, and it writes nothing (no WAL, no fsync); it has no lease, no fencing token, no loss signal and no fairness (see its FIFO figure). ")
	fmt.Fprintf(b, "The peer, labelled *pglock-style*, is cirello.io/pglock's algorithm with its defaults written in the bench (`bench/pglock.go`; the library itself cannot be fetched here): ")
	fmt.Fprintf(b, "a row per lock whose version a heartbeat rewrites every 5 s, a 20 s lease, an acquire that upserts the row in a serializable transaction where it is free or at the version seen a lease ago, ")
	fmt.Fprintf(b, "and an acquire that finds the lock taken sleeps one lease before it tries again: with 8 contenders the client that holds it takes it again and again while the others sleep. ")
	writeRingProse(b, rs)
	fmt.Fprintf(b, "The *row floor* (`PostgresRowFloor`, uncontended only) is the least a lock kept in a table costs: a row inserted and deleted, each statement committed on its own; *%s* the same with `synchronous_commit = off`. ", rowFloorAsync)
	fmt.Fprintf(b, "Statements and server time are the server's own (`pg_stat_statements`, top-level statements; a plpgsql function counts once, its own statements inside its time).\n\n")
	for _, st := range stores {
		fmt.Fprintf(b, "### %s\n\n", st)
		fmt.Fprintf(b, "| target | before | baton | pglock-style | floor | verdict |\n|---|---|---|---|---|---|\n")
		for _, r := range pgTargets(rs, st) {
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", r.target, r.before, r.baton, r.peer, r.floor, r.verdict)
		}
		fmt.Fprintf(b, "\n")
	}
}
