package baton_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/memory"
)

// hookedConn runs onGet once, after the first Get of path returns, and
// onDelete once, before the first Delete of path: a test places another
// client's step between a recipe's read and its next write.
type hookedConn struct {
	backend.Conn
	mu       sync.Mutex
	path     string
	onGet    func()
	onDelete func()
}

func (c *hookedConn) take(path string, f *func()) func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if path != c.path || *f == nil {
		return nil
	}
	g := *f
	*f = nil
	return g
}

func (c *hookedConn) Get(ctx context.Context, path string) ([]byte, backend.Node, error) {
	data, n, err := c.Conn.Get(ctx, path)
	if f := c.take(path, &c.onGet); f != nil {
		f()
	}
	return data, n, err
}

func (c *hookedConn) Delete(ctx context.Context, n backend.Node) error {
	if f := c.take(n.Path, &c.onDelete); f != nil {
		f()
	}
	return c.Conn.Delete(ctx, n)
}

// permitRace opens a holder session through a hookedConn (on the permit's
// node) and an admin session on one memory store, and takes a permit of
// ttl as the holder.
func permitRace(t *testing.T, ctx context.Context, ttl time.Duration) (hc *hookedConn, holder *baton.PermitSemaphore, as *baton.Session, pm *baton.Permit) {
	t.Helper()
	st := memory.New()
	var ss []*baton.Session
	for range 2 {
		s, err := st.Open(ctx, memory.WithTTL(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close(context.Background()) })
		ss = append(ss, s)
	}
	hc = &hookedConn{Conn: ss[0].Conn()}
	holder = baton.NewPermitSemaphore(baton.NewSession(hc, baton.Telemetry{}), "/race", 1)
	pm, err := holder.Acquire(ctx, ttl)
	if err != nil {
		t.Fatal(err)
	}
	name, _, _ := strings.Cut(pm.ID, "@")
	hc.mu.Lock()
	hc.path = backend.Join("/race/leases", name)
	hc.mu.Unlock()
	return hc, holder, ss[1], pm
}

// An Extend that lands between the expiring holder's read of its permit
// and its end wins: Extend returns nil, and the permit lasts the new time
// to live from the extension (before, the holder went on to expire it and
// the extension was lost with it).
func TestPermitExtendDuringExpiry(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const ttl, newTTL = 100 * time.Millisecond, 600 * time.Millisecond
	extended := make(chan error, 1)
	var at time.Time
	hc, holder, as, pm := permitRace(t, ctx, ttl)
	admin := baton.NewPermitSemaphore(as, "/race", 1)
	hc.mu.Lock()
	hc.onGet = func() { // the holder has read its permit, unextended
		at = time.Now()
		extended <- admin.Extend(ctx, pm.ID, newTTL)
	}
	hc.mu.Unlock()
	var err error
	select {
	case err = <-extended:
	case <-time.After(10 * time.Second):
		t.Fatal("the holder never read its permit at expiry")
	}
	if err != nil {
		t.Fatalf("Extend: %v", err)
	}
	select {
	case <-pm.Lease.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the extended permit never expired")
	}
	if el := time.Since(at); el < newTTL {
		t.Fatalf("a permit extended to %v ended %v after the extension returned nil: %v", newTTL, el, pm.Lease.Err())
	}
	if !errors.Is(pm.Lease.Err(), baton.ErrPermitExpired) {
		t.Fatalf("Lease.Err: %v, want ErrPermitExpired", pm.Lease.Err())
	}
	if err := holder.Release(ctx, pm); !errors.Is(err, baton.ErrPermitExpired) {
		t.Fatalf("Release: %v", err)
	}
}

// An Extend that reads the permit before the holder marks it expired and
// writes after loses: it returns ErrNotFound, not nil (before, it
// returned nil and the permit was deleted all the same).
func TestPermitExtendAfterExpiryMark(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const ttl = 100 * time.Millisecond
	hc, holder, as, pm := permitRace(t, ctx, ttl)
	// The admin's read of the permit returns only once the holder has
	// ended it; the holder's delete waits for the admin's Extend.
	ac := &hookedConn{Conn: as.Conn(), path: hc.path}
	admin := baton.NewPermitSemaphore(baton.NewSession(ac, baton.Telemetry{}), "/race", 1)
	extended := make(chan error, 1)
	ac.onGet = func() { <-pm.Lease.Done() }
	hc.mu.Lock()
	hc.onDelete = func() {
		select {
		case <-extended:
		case <-time.After(10 * time.Second):
		}
	}
	hc.mu.Unlock()
	err := admin.Extend(ctx, pm.ID, time.Minute)
	extended <- err
	if !errors.Is(err, baton.ErrNotFound) {
		t.Fatalf("Extend racing the expiry: %v, want ErrNotFound", err)
	}
	if !errors.Is(pm.Lease.Err(), baton.ErrPermitExpired) {
		t.Fatalf("Lease.Err: %v, want ErrPermitExpired", pm.Lease.Err())
	}
	if err := holder.Release(ctx, pm); !errors.Is(err, baton.ErrPermitExpired) {
		t.Fatalf("Release: %v", err)
	}
	if _, err := admin.Permit(ctx, pm.ID); !errors.Is(err, baton.ErrNotFound) {
		t.Fatalf("Permit after the expiry: %v, want ErrNotFound", err)
	}
}
