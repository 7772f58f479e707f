package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/pgtest"
)

// The server restarted at once (pg_ctl restart -m immediate: a crash and
// recovery) within the TTL: sessions and locks are rows, so the holder
// still holds (another session's TryLock is refused), and unlocks; the
// next lock's token is higher.
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
	a, b := open(), open()
	ma, mb := baton.NewMutex(a, "restart"), baton.NewMutex(b, "restart")
	la, err := ma.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv.Restart(t)
	if _, err := mb.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryLock by another session after the restart: %v, want ErrLocked", err)
	}
	if la.Err() != nil {
		t.Fatalf("the holder's lease after the restart: %v", la.Err())
	}
	if err := ma.Unlock(ctx); err != nil {
		t.Fatalf("Unlock after the restart: %v", err)
	}
	lb, err := mb.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if lb.Token() <= la.Token() {
		t.Fatalf("token %d after %d", lb.Token(), la.Token())
	}
	if err := mb.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
