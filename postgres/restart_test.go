package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/pgtest"
)

// The server restarted at once (pg_ctl restart -m immediate: a crash and
// recovery) within the TTL: sessions and locks are rows, so the holder
// still holds (another session's TryLock is refused), and unlocks; the
// next lock's token is higher. A waiter queued across the restart gets the
// lock when the holder unlocks: the crash emptied the unlogged watches
// table, and its session registered its watch again once it had dialed
// again.
func TestServerRestart(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn := fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", srv.Addr())
	open := func() *baton.Session {
		s, err := Open(ctx, dsn, WithTTL(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close(context.Background()) })
		return s
	}
	a, b, c := open(), open(), open()
	ma, mb := baton.NewMutex(a, "restart"), baton.NewMutex(b, "restart")
	la, err := ma.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type locked struct {
		l   *baton.Lease
		err error
	}
	got := make(chan locked, 1)
	go func() {
		l, err := mb.Lock(ctx)
		got <- locked{l, err}
	}()
	// b waits: its watch on a's node is a row (with a's own on it).
	await.Until(t, 10*time.Second, "b's watch on a's node", func() bool {
		return srv.SQL(t, "", "SELECT count(*) FROM baton.watches WHERE kind = 'gone' AND path LIKE 'restart/%'") == "2"
	})
	srv.Restart(t)
	if _, err := baton.NewMutex(c, "restart").TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryLock by another session after the restart: %v, want ErrLocked", err)
	}
	if la.Err() != nil {
		t.Fatalf("the holder's lease after the restart: %v", la.Err())
	}
	// The watches came back (the crash emptied the table), b's among
	// them, before a lets go: else this tests nothing of the kind.
	await.Until(t, 20*time.Second, "the watches registered again after the restart", func() bool {
		return srv.SQL(t, "", "SELECT count(*) FROM baton.watches WHERE kind = 'gone' AND path LIKE 'restart/%'") == "2"
	})
	select {
	case r := <-got:
		t.Fatalf("b's Lock returned while a held: %v, %v", r.l, r.err)
	default:
	}
	if err := ma.Unlock(ctx); err != nil {
		t.Fatalf("Unlock after the restart: %v", err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("b's Lock, queued across the restart: %v", r.err)
	}
	if r.l.Token() <= la.Token() {
		t.Fatalf("token %d after %d", r.l.Token(), la.Token())
	}
	if err := mb.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
