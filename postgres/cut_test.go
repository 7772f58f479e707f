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
	"github.com/batonhq/baton/internal/proxy"
)

// A cut shorter than the session's TTL (every connection closed, new ones
// refused for a while) costs the calls made during it a wait, not an
// error: they run once the store is back, on the same live session, as on
// ZooKeeper. (A release that failed with "unexpected EOF" during such a
// cut made `baton elect --requeue` exit instead of campaigning again.)
func TestCutShorterThanTTL(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	p := proxy.Start(t, srv.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn := fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable&schema=%s", p.Addr(), newSchema())
	s, err := Open(ctx, dsn, WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	c := s.Conn()
	n, err := c.Create(ctx, "/cut", backend.KindLock, nil, backend.Ephemeral|backend.Sequential)
	if err != nil {
		t.Fatal(err)
	}
	p.Cut()
	healed := make(chan struct{})
	time.AfterFunc(500*time.Millisecond, func() { p.Heal(); close(healed) })
	if err := c.Delete(ctx, n); err != nil {
		t.Fatalf("Delete during a cut of 0.5s: %v, want nil once the store is back", err)
	}
	select {
	case <-healed:
	default:
		t.Fatal("Delete returned before the store was back")
	}
	if kids, err := c.Children(ctx, "/cut"); err != nil || len(kids) != 0 {
		t.Fatalf("after the delete: %v, %v", kids, err)
	}
	if s.Err() != nil {
		t.Fatalf("session ended: %v", s.Err())
	}
}

// A call made while the store is cut off for longer than the TTL returns
// the session's loss, not a connection error, once the session is lost.
func TestCutLongerThanTTL(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	p := proxy.Start(t, srv.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn := fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable&schema=%s", p.Addr(), newSchema())
	s, err := Open(ctx, dsn, WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	p.Cut()
	defer p.Heal()
	_, err = s.Conn().Children(ctx, "/cut")
	if !errors.Is(err, baton.ErrSessionLost) {
		t.Fatalf("Children while cut off: %v, want ErrSessionLost", err)
	}
}
