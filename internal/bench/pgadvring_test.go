package bench

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/pgtest"
)

// TestPostgresWakeRing: the wake ring hands the lock on in turn, one
// holder at a time, with synchronous commits and without. As in
// TestPostgresNotifyRing, a release that finds nobody in line lets its
// releaser take it back: up to 20% passes. (Its order is that of joining
// the line, after a round trip that takes the locker's own key, not that
// of calling Lock, by which the bench counts FIFO: under load the two
// differ by more than the bench's millisecond.)
func TestPostgresWakeRing(t *testing.T) {
	url := pgtest.Start(t).URL("postgres")
	for _, async := range []bool{false, true} {
		tg := Target{Impl: "wake ring floor", Store: "postgres", Factory: &PostgresWakeRing{URL: url, AsyncCommit: async}}
		r, err := Run(context.Background(), tg, Config{Workload: "contended", Clients: 4, Duration: 300 * time.Millisecond})
		if err != nil {
			t.Fatalf("async commit %v: %v", async, err)
		}
		if r.Acquisitions == 0 || r.Errors != 0 || r.Overlaps != 0 {
			t.Fatalf("async commit %v: %d acquisitions, %d errors, %d overlaps (%s)", async, r.Acquisitions, r.Errors, r.Overlaps, r.Note)
		}
		if r.ReacquirePct == nil || *r.ReacquirePct > 20 {
			t.Errorf("async commit %v: re-acquisition %s, want a hand-off to another client almost always", async, num(r.ReacquirePct, 2))
		}
	}
}
