package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/pgtest"
)

// A waiter whose session expired on the server, and whose own node went
// with it, is told that its session ended, not that its node is gone
// from a live session, even before the sweep's notification reaches its
// listening connection (the conformance suite's DeadHolderFreesLease and
// RWMutex Expiry once saw "lock lost: our node is gone" at a load of 20).
// The session's row is deleted here with its trigger off, so that no
// notification comes at all.
func TestRelistReportsSessionExpiredBeforeItsNotification(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	schema := newSchema()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := Open(ctx, fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable&schema=%s", srv.Addr(), schema))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	c := s.Conn()
	me, _, err := c.(backend.CreateLister).CreateAndList(ctx, "/relist", backend.KindLock, nil, backend.Ephemeral|backend.Sequential)
	if err != nil {
		t.Fatal(err)
	}
	db := admin(t, srv)
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"ALTER TABLE " + schema + ".sessions DISABLE TRIGGER session_ended",
		"DELETE FROM " + schema + ".sessions",
		"ALTER TABLE " + schema + ".sessions ENABLE TRIGGER session_ended",
	} {
		if _, err := tx.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Err(); err != nil {
		t.Fatalf("the session ended before Relist (%v): the test needs it not told yet", err)
	}
	kids, err := c.(backend.Relister).Relist(ctx, "/relist", me)
	if !errors.Is(err, baton.ErrSessionExpired) {
		t.Fatalf("Relist without our node: %v (listed %d), want ErrSessionExpired", err, len(kids))
	}
	if !errors.Is(c.Err(), baton.ErrSessionExpired) {
		t.Fatalf("session Err %v, want ErrSessionExpired", c.Err())
	}
}
