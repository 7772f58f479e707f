package reliability

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batontest"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/postgres"
)

// The server restarted with `pg_ctl restart -m immediate` (every
// connection dropped, no checkpoint, recovery from the WAL) while a lock
// is held and waited for. Sessions are rows whose expiry the server counts:
// one that renews again within its TTL after the restart keeps its lock,
// one that does not is told (Done) before its row expires, and anyone may
// take the lock only once it has. Every other run the server stays down
// for longer than the TTL before it starts again, so that every session
// has expired when it comes back. Asserted: no two holders at once, tokens
// increasing, the waiter holds in the end (the holder releasing once it
// finds itself still holding, after 300 ms), within a bound.
func TestPostgresRestart(t *testing.T) {
	independent(t)
	srv := pgtest.Start(t)
	n := runs(2, 10)
	row := Row{Scenario: "server restarted (pg_ctl restart -m immediate) while held and waited for", Store: "postgres", Runs: n}
	kept := 0
	for i := range n {
		rec, holderKept, ok := pgRestartOnce(t, srv, i)
		if !ok {
			row.Violations++
		}
		if holderKept {
			kept++
		}
		row.Recovery = append(row.Recovery, rec)
	}
	row.Note = fmt.Sprintf("TTL %v; every other run the server is down %v (past the TTL) before it starts again; the holder kept its lock in %d of %d runs (it renewed in time; it then works 300 ms and releases), or was told it lost it before the waiter held; recovery = restart → waiter holds", pgTTL, pgTTL+500*time.Millisecond, kept, n)
	record(row)
}

func pgRestartOnce(t *testing.T, srv *pgtest.Server, run int) (recovery time.Duration, holderKept, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	url := srv.URL("")
	name := fmt.Sprintf("/reliability/pg-restart-%d-%d", run, time.Now().UnixNano())
	holder := openPg(t, ctx, url)
	hm := baton.NewMutex(holder, name)
	held, err := hm.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var chk batontest.Checker
	spH := chk.Enter(0, held.Token())
	left := make(chan struct{})
	leave := func() {
		select {
		case <-left:
		default:
			chk.Leave(spH)
			close(left)
		}
	}
	lost := make(chan struct{})
	go func() {
		<-held.Done()
		leave()
		close(lost)
	}()
	type result struct {
		at  time.Time
		err error
	}
	got := make(chan result, 1)
	go func() {
		l, err := pgLockRetrying(ctx, url, name)
		at := time.Now()
		if err != nil {
			got <- result{at, err}
			return
		}
		sp := chk.Enter(1, l.Token())
		hold(l.Lease, 100*time.Millisecond)
		chk.Leave(sp)
		got <- result{at, l.Release(ctx)}
	}()
	await.Children(t, ctx, holder.Conn(), name, 10*time.Second, "the waiter in line", await.AtLeast(2))

	restarted := time.Now()
	down := run%2 == 1
	if down {
		// The server down for longer than the TTL: every session is past
		// its expiry when it comes back.
		if err := srv.Stop(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(pgTTL + 500*time.Millisecond) // the outage's length
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
	} else {
		srv.Restart(t)
	}
	// The holder either renews in time and still holds, or is told it lost
	// the lock. Whichever comes first after the restart.
	renewed := await.WithinCtx(ctx, func() bool {
		select {
		case <-lost:
			return true
		default:
		}
		// A renewal confirmed after the restart moves the loss deadline past it.
		return held.Err() == nil && held.Deadline().After(restarted.Add(pgTTL))
	})
	select {
	case <-lost:
	default:
		if renewed && held.Err() == nil {
			holderKept = true
			time.Sleep(300 * time.Millisecond) // the holder works on
			leave()
			if err := hm.Unlock(ctx); err != nil {
				t.Logf("run %d: the holder's release after the restart: %v", run, err)
			}
		}
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("run %d: waiter: %v", run, r.err)
	}
	<-left
	recovery = r.at.Sub(restarted)
	ok = true
	if err := chk.Verify(true); err != nil {
		ok = false
		t.Errorf("run %d: %v", run, err)
	}
	if bound := 30 * time.Second; recovery > bound {
		ok = false
		t.Errorf("run %d: the waiter held %v after the restart (bound %v)", run, recovery, bound)
	}
	return recovery, holderKept, ok
}

// openPg opens a session on the server at url, closed when t ends.
func openPg(t *testing.T, ctx context.Context, url string) *baton.Session {
	t.Helper()
	s, err := postgres.Open(ctx, url, postgres.WithTTL(pgTTL))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	return s
}

// pgLockRetrying locks name as `baton lock` does through an outage: on
// its session, and when that session is gone (or cannot be opened), on a
// new one, after 100 ms doubling up to 2 s.
func pgLockRetrying(ctx context.Context, url, name string) (*pgLease, error) {
	backoff := 100 * time.Millisecond
	var last error
	var s *baton.Session
	for range 100 {
		if s == nil {
			s, last = postgres.Open(ctx, url, postgres.WithTTL(pgTTL))
		}
		if s != nil {
			m := baton.NewMutex(s, name)
			l, err := m.Lock(ctx)
			if err == nil {
				return &pgLease{Lease: l, m: m, s: s}, nil
			}
			last = err
			if s.Err() != nil {
				closeSession(s)
				s = nil
			}
		}
		select {
		case <-ctx.Done():
			if s != nil {
				closeSession(s)
			}
			return nil, fmt.Errorf("%w (last error: %v)", ctx.Err(), last)
		case <-time.After(backoff): // retry pace, as a client's
		}
		backoff = min(2*backoff, 2*time.Second)
	}
	if s != nil {
		closeSession(s)
	}
	return nil, fmt.Errorf("no lock after 100 tries: %w", last)
}

// pgLease is a lease with its Mutex and the session it was taken on.
type pgLease struct {
	*baton.Lease
	m *baton.Mutex
	s *baton.Session
}

// Release unlocks and closes the session.
func (l *pgLease) Release(ctx context.Context) error {
	err := l.m.Unlock(ctx)
	if cerr := l.s.Close(ctx); err == nil && !errors.Is(cerr, baton.ErrSessionExpired) {
		err = cerr
	}
	return err
}

func closeSession(s *baton.Session) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.Close(ctx)
}
