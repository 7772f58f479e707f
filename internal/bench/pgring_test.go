package bench

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/pgtest"
)

// TestPostgresRings: the notify ring and the wake ring hand the lock on in
// turn, one holder at a time, with synchronous commits and without, and
// their hand-offs counted from the release being sent are no shorter than
// from its return. (The test server has no pg_stat_statements: the bench
// counts the rings' statements.) As in handsOff, a release that finds
// nobody in line lets its releaser take it back: up to 20% passes. (No
// FIFO is asked of the wake ring: its order is that of joining its line,
// after a round trip that takes the locker's own key, not that of calling
// Lock, by which the bench counts FIFO.)
func TestPostgresRings(t *testing.T) {
	url := pgtest.Start(t).URL("postgres")
	for _, async := range []bool{false, true} {
		for _, tg := range []Target{
			{Impl: "notify ring floor", Store: "postgres", Factory: &PostgresNotifyRing{URL: url, AsyncCommit: async}},
			{Impl: "wake ring floor", Store: "postgres", Factory: &PostgresWakeRing{URL: url, AsyncCommit: async}},
		} {
			r, err := Run(context.Background(), tg, Config{Workload: "contended", Clients: 4, Duration: 300 * time.Millisecond})
			if err != nil {
				t.Fatalf("%s, async commit %v: %v", tg.Impl, async, err)
			}
			if r.Acquisitions == 0 || r.Errors != 0 || r.Overlaps != 0 {
				t.Fatalf("%s, async commit %v: %d acquisitions, %d errors, %d overlaps (%s)", tg.Impl, async, r.Acquisitions, r.Errors, r.Overlaps, r.Note)
			}
			if r.ReacquirePct == nil || *r.ReacquirePct > 20 {
				t.Errorf("%s, async commit %v: re-acquisition %s, want a hand-off to another client almost always", tg.Impl, async, num(r.ReacquirePct, 2))
			}
			if r.HandoffSentP50 == nil || r.HandoffP50 == nil || *r.HandoffSentP50 < *r.HandoffP50 {
				t.Errorf("%s, async commit %v: hand-off p50 from the release sent %s < from its return %s", tg.Impl, async, num(r.HandoffSentP50, 1), num(r.HandoffP50, 1))
			}
		}
	}
}

// TestHandoffSent: a hand-off counts from the release's return, and from
// its being sent.
func TestHandoffSent(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(0, int64(ms)*int64(time.Millisecond)) }
	cs := []cycle{
		{client: 0, order: 1, req: at(0), acq: at(1), rel: at(2), done: at(5)},
		{client: 1, order: 2, req: at(0), acq: at(6), rel: at(7), done: at(8)},
	}
	var r Result
	chainStats(&r, cs, nil, 2)
	if r.HandoffP50 == nil || *r.HandoffP50 != 1000 || r.HandoffSentP50 == nil || *r.HandoffSentP50 != 4000 {
		t.Fatalf("hand-off %s µs, from the release sent %s µs; want 1000 and 4000", num(r.HandoffP50, 0), num(r.HandoffSentP50, 0))
	}
}
