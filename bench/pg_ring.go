package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/batonhq/baton/internal/bench"
)

// notifyRing labels the notify ring (bench.PostgresNotifyRing) in results:
// the contended floor of a lock on LISTEN/NOTIFY with durable writes.
const notifyRing = "notify ring floor"

// notifyRingAsync labels the notify ring with synchronous_commit off: its
// releases do not wait for their WAL flush.
const notifyRingAsync = "notify ring floor, async commit"

// wakeRing labels the wake ring (bench.PostgresWakeRing): waiters woken
// inside the server, the release a row written and committed; wakeRingAsync
// the same with synchronous_commit off.
const (
	wakeRing      = "wake ring floor"
	wakeRingAsync = "wake ring floor, async commit"
)

// rowFloor labels the row floor (bench.PostgresRowFloor), rowFloorAsync
// the same with synchronous_commit off.
const (
	rowFloor      = "row floor"
	rowFloorAsync = "async-commit row floor"
)

// ringAcqNote says, for target 1 on st, what the notify ring reached and
// at what ratio to the advisory floor and to baton: the physical limit of
// a LISTEN/NOTIFY hand-off beside the target. It is empty where the run
// has no ring (results saved before it).
func ringAcqNote(rs []bench.Result, st string, bA, fA spread) string {
	rA := figure(rs, notifyRing, st, "contended", 8, acqPerS)
	if rA.n == 0 {
		return ""
	}
	s := fmt.Sprintf("; the physical limit of a LISTEN/NOTIFY hand-off with a durable release, the notify ring floor: %s acq/s = %s the advisory floor's, baton at %s of it",
		rA, ratioStr(rA, fA), ratioStr(bA, rA))
	if aA := figure(rs, notifyRingAsync, st, "contended", 8, acqPerS); aA.n > 0 {
		s += fmt.Sprintf("; the same ring with synchronous_commit off, its releases not waiting for the WAL flush: %s acq/s = %s the advisory floor's", aA, ratioStr(aA, fA))
	}
	if wA := figure(rs, wakeRing, st, "contended", 8, acqPerS); wA.n > 0 {
		s += fmt.Sprintf("; the wake ring floor, waiters woken inside the server with no notification, the physical limit of any hand-off that writes a row: %s acq/s = %s the advisory floor's", wA, ratioStr(wA, fA))
		if aA := figure(rs, wakeRingAsync, st, "contended", 8, acqPerS); aA.n > 0 {
			s += fmt.Sprintf(", and with synchronous_commit off %s = %s", aA, ratioStr(aA, fA))
		}
	}
	return s
}

// bestRing is the fastest of the ring floors on st at 8 contenders, and
// its label: the physical limit of a hand-off that writes a row.
func bestRing(rs []bench.Result, st string) (string, spread) {
	var best spread
	var name string
	for _, impl := range []string{notifyRing, notifyRingAsync, wakeRing, wakeRingAsync} {
		if a := figure(rs, impl, st, "contended", 8, acqPerS); a.n > 0 && a.med > best.med {
			best, name = a, impl
		}
	}
	return name, best
}

// ringAcqVerdict explains a missed target 1 where the notify ring itself
// stays under half the advisory floor: no lock handing off by a durable
// write and a NOTIFY reaches the target on this server.
func ringAcqVerdict(rs []bench.Result, st string, fA spread) string {
	name, rA := bestRing(rs, st)
	if rA.n == 0 || fA.n == 0 || rA.med >= 0.5*fA.med {
		return ""
	}
	if name == notifyRing {
		return fmt.Sprintf(": the target lies beyond the physical limit here, the notify ring floor reaching only %s the advisory floor's", ratioStr(rA, fA))
	}
	return fmt.Sprintf(": the target lies beyond the physical limit here, the fastest ring floor (%s) reaching only %s the advisory floor's", name, ratioStr(rA, fA))
}

// ringHandoffNote gives the notify ring's hand-off p50 and p99 for target
// 3, or nothing where the run has no ring.
func ringHandoffNote(rs []bench.Result, st string) string {
	p99 := figure(rs, notifyRing, st, "contended", 8, handoffP99)
	if p99.n == 0 {
		return ""
	}
	return fmt.Sprintf("; the notify ring floor, the physical limit of a LISTEN/NOTIFY hand-off: p50 %s, p99 %s", figure(rs, notifyRing, st, "contended", 8, handoffP50), p99)
}

var (
	handoffSentP50 = ptr(func(r bench.Result) *float64 { return r.HandoffSentP50 }, 1e-3)
	handoffSentP99 = ptr(func(r bench.Result) *float64 { return r.HandoffSentP99 }, 1e-3)
)

// sentHandoffNote gives, for target 3, the hand-offs counted from the
// release being sent (its own round trip and commit included) of baton,
// the advisory floor and the notify rings, p50 / p99 in ms; nothing for
// results saved before they were measured.
func sentHandoffNote(rs []bench.Result, st string) string {
	if figure(rs, "baton", st, "contended", 8, handoffSentP99).n == 0 {
		return ""
	}
	s := "; from the release sent, p50 / p99:"
	for i, impl := range []string{"baton", "floor", notifyRing, notifyRingAsync, wakeRing, wakeRingAsync} {
		p99 := figure(rs, impl, st, "contended", 8, handoffSentP99)
		if p99.n == 0 {
			continue
		}
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf(" %s %s / %s", impl, figure(rs, impl, st, "contended", 8, handoffSentP50), p99)
	}
	return s
}

// writeRingProse says what the notify ring floor is, where rs has it.
func writeRingProse(b *strings.Builder, rs []bench.Result) {
	if !slices.ContainsFunc(rs, func(r bench.Result) bool { return r.Impl == notifyRing }) {
		return
	}
	fmt.Fprintf(b, "The *notify ring floor* (`PostgresNotifyRing`, contended only) is the physical limit of a lock on LISTEN/NOTIFY with durable writes, baton's hand-off and nothing else: ")
	fmt.Fprintf(b, "each client has one connection LISTENing on a channel of its own and one for statements; the holder releases with one autocommit statement that updates the lock's row and, in the same statement, NOTIFYs the next client's channel (a commit, with fsync a WAL flush), ")
	fmt.Fprintf(b, "and the next client, woken on its listening connection, reads the row once and holds. Its line is kept in process, so it runs no queuing statement and no check: no lock handing off that way is faster on the same server. ")
	fmt.Fprintf(b, "The same ring with `synchronous_commit = off` on the statements' connections (*%s*) releases without waiting for the WAL flush, which separates the flush from the notification's delivery (a NOTIFY alone still commits with a flush). ", notifyRingAsync)
	if slices.ContainsFunc(rs, func(r bench.Result) bool { return r.Impl == wakeRing }) {
		fmt.Fprintf(b, "The *wake ring floor* (`PostgresWakeRing`, contended only) is the physical limit of any lock whose hand-off writes a row, with the fastest wake there is: no notification, each waiter blocks inside the server on an advisory lock that the one ahead of it in line holds, as the advisory floor's waiters do; ")
		fmt.Fprintf(b, "the holder releases with one CALL that updates the lock's row, commits and then lets go of its advisory lock, and the next waiter, woken by the server's lock manager, reads the row in a statement pipelined behind its wait. ")
		fmt.Fprintf(b, "It needs a connection blocked in the server for every waiting lock, where the issue asks that one connection carry all of a client's waits; *%s* is the same with `synchronous_commit = off`. ", wakeRingAsync)
	}
	fmt.Fprintf(b, "A hand-off, for every row, runs from the release's return to the next holder's acquire's return (0 where the next holder had it first), and also, where given, from the release being sent, its own round trip and commit included. ")
}
