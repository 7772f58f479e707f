package baton

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/backend"
)

// PermitSemaphore is a Semaphore whose permits expire, Redisson's
// RPermitExpirableSemaphore: each permit is acquired for a time to live
// and has an id by which any process can query it, extend it and release
// it. Its layout is Semaphore's (Curator's InterProcessSemaphoreV2 on
// ZooKeeper: a permit is a lease node NAME/leases/…lease-<seq>), so
// Curator's semaphore and baton's Semaphore on the same name share the n
// permits; their leases never expire.
//
// Whose clock counts: the holder's. The holder's process counts the time
// to live on its own monotonic clock from the moment Acquire returned;
// when it runs out, the holder reads its lease node, and unless the
// permit was extended meanwhile, it ends the permit's Lease (Done closes,
// Err wraps ErrLost and ErrPermitExpired) and then deletes the node, so
// the holder is told before anyone else can take the permit. No other
// process compares a clock or removes a permit for being old: if the
// holder's process dies or stalls, its session expires and the store
// frees the permit, as for any lease. An extension (Extend, from any
// process) writes the new time to live into the lease node; the holder
// finds it when its time runs out and counts the new time to live from
// then, so an extended permit lasts at least the new time to live from
// the extension. Expiry and extension race safely: the holder marks the
// permit expired by a write at the version of the node it read, and
// Extend writes at the version it read, so exactly one of the two lands:
// an Extend that returns nil has extended a permit that then lasts the
// new time to live, and one that comes too late returns ErrNotFound.
//
// A PermitSemaphore may be used by many goroutines.
type PermitSemaphore struct {
	m *Semaphore
}

// Permit is one permit of a PermitSemaphore held by this process.
type Permit struct {
	// ID is the permit's id: what PermitSemaphore.Permit, Extend and
	// ReleaseID take.
	ID string
	// Lease is the permit's hold: its Token is a fencing token and its
	// Done closes when the permit ends (expired, released by id, lost).
	Lease *Lease

	sem  *PermitSemaphore
	stop chan struct{}
	once sync.Once
	done chan struct{} // closed when the expiry timer has stopped
}

// PermitInfo is what the store says of one permit.
type PermitInfo struct {
	// ID is the permit's id.
	ID string
	// Holder is who holds the permit (zero for a peer's lease).
	Holder Identity
	// TTL is the time to live last given to the permit (0: it never
	// expires, a Semaphore's or Curator's lease).
	TTL time.Duration
	// Set is when TTL was last given, by the writer's clock (shown to
	// people; no decision depends on it).
	Set time.Time
	// Waiting is true for a lease still waiting for one of the n permits.
	Waiting bool
}

// permitJSON is a permit lease node's data: the holder's identity and the
// time to live; gen counts the extensions.
type permitJSON struct {
	identityJSON
	PermitTTLms int64 `json:"permit_ttl_ms"`
	PermitAtMs  int64 `json:"permit_at_ms"`
	Gen         int64 `json:"permit_gen"`
	// Expired is set by the holder, at the version it read, before it
	// ends an expired permit.
	Expired bool `json:"permit_expired,omitempty"`
}

// NewPermitSemaphore returns a semaphore of n expiring permits on name (a
// ZooKeeper path, an etcd prefix). It does no I/O.
func NewPermitSemaphore(s *Session, name string, n int) *PermitSemaphore {
	return &PermitSemaphore{m: NewSemaphore(s, name, n)}
}

// Name is the semaphore's name on the store.
func (p *PermitSemaphore) Name() string { return p.m.name }

// Acquire takes one permit for ttl, waiting in line as long as ctx allows
// (see Semaphore.Acquire). ttl must be positive.
func (p *PermitSemaphore) Acquire(ctx context.Context, ttl time.Duration) (*Permit, error) {
	return p.acquire(ctx, ttl, false)
}

// TryAcquire takes one permit for ttl only if one is free now, else it
// returns ErrLocked.
func (p *PermitSemaphore) TryAcquire(ctx context.Context, ttl time.Duration) (*Permit, error) {
	return p.acquire(ctx, ttl, true)
}

func (p *PermitSemaphore) acquire(ctx context.Context, ttl time.Duration, try bool) (*Permit, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("%w: permit time to live %v", ErrInvalidTTL, ttl)
	}
	l, err := p.m.acquireWith(ctx, try, func() []byte { return permitData(p.m.s.nodeData(), ttl, 0) })
	if err != nil {
		return nil, err
	}
	p.m.mu.Lock()
	h := p.m.held[l]
	p.m.mu.Unlock()
	pm := &Permit{ID: permitID(h.node), Lease: l, sem: p, stop: make(chan struct{}), done: make(chan struct{})}
	go pm.expire(h.nodeHold, time.Now().Add(ttl))
	return pm, nil
}

// expire ends the permit when its time to live runs out unextended.
func (pm *Permit) expire(h *nodeHold, deadline time.Time) {
	defer close(pm.done)
	gen := int64(0)
	for {
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-t.C:
		case <-pm.stop:
			t.Stop()
			return
		case <-pm.Lease.Done():
			t.Stop()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		data, n, err := h.s.conn.Get(ctx, h.node.Path)
		if rec, ok := parsePermit(data); err == nil && ok {
			if rec.Gen != gen {
				cancel()
				gen = rec.Gen
				deadline = time.Now().Add(time.Duration(rec.PermitTTLms) * time.Millisecond)
				continue
			}
			// Mark it expired at the version read: an Extend that
			// wrote since makes this fail, and is read again; one
			// that read before fails on this write (ErrNotFound).
			rec.Expired = true
			b, _ := json.Marshal(rec)
			err = h.s.conn.Commit(ctx, backend.Node{}, backend.Op{Kind: backend.OpSet, Node: n, Data: b, IfVersion: true})
			if errors.Is(err, ErrConflict) {
				cancel()
				deadline = time.Now()
				continue
			}
		}
		cancel()
		// Expired, or its node unreadable: tell the holder first, then
		// give the permit back.
		h.end(fmt.Errorf("%w: %w: %s", ErrLost, ErrPermitExpired, pm.ID))
		ctx, cancel = context.WithTimeout(context.Background(), h.s.TTL())
		_ = pm.sem.m.Release(ctx, pm.Lease)
		cancel()
		return
	}
}

// Release gives back a permit held by this process: its Lease ends and
// its node is deleted (see Semaphore.Release). After an expiry or a loss
// it returns an error wrapping ErrLost.
func (p *PermitSemaphore) Release(ctx context.Context, pm *Permit) error {
	pm.once.Do(func() { close(pm.stop) })
	<-pm.done
	err := p.m.Release(ctx, pm.Lease)
	if errors.Is(err, ErrNotHeld) && pm.Lease.Err() != nil {
		return pm.Lease.Err() // given back already: expired
	}
	return err
}

// Permits lists the permits held and the leases waiting, in line order
// (Waiting is known only with n ≥ 1).
func (p *PermitSemaphore) Permits(ctx context.Context) ([]PermitInfo, error) {
	c := p.m.s.conn
	kids, err := c.Children(ctx, p.m.leasesDir())
	if err != nil {
		return nil, err
	}
	var out []PermitInfo
	for _, k := range onlyKind(kids, backend.KindLease) {
		data, n, err := c.Get(ctx, k.Path)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		info := permitInfo(n, data)
		info.Waiting = p.m.n >= 1 && len(out) >= p.m.n
		out = append(out, info)
	}
	return out, nil
}

// Permit returns what the store says of the permit id, or an error
// wrapping ErrNotFound once it is gone.
func (p *PermitSemaphore) Permit(ctx context.Context, id string) (PermitInfo, error) {
	n, err := p.node(id)
	if err != nil {
		return PermitInfo{}, err
	}
	data, got, err := p.m.s.conn.Get(ctx, n.Path)
	if err == nil && got.Token != n.Token {
		err = fmt.Errorf("%w: permit %s", ErrNotFound, id)
	}
	if err != nil {
		return PermitInfo{}, err
	}
	return permitInfo(got, data), nil
}

// Extend gives the permit id a new time to live, counted from no earlier
// than now, from any process; it returns an error wrapping ErrNotFound if
// the permit is gone. See PermitSemaphore for when the holder sees it.
func (p *PermitSemaphore) Extend(ctx context.Context, id string, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("%w: permit time to live %v", ErrInvalidTTL, ttl)
	}
	n, err := p.node(id)
	if err != nil {
		return err
	}
	c := p.m.s.conn
	for try := 1; ; try++ {
		data, got, err := c.Get(ctx, n.Path)
		if err == nil && got.Token != n.Token {
			err = fmt.Errorf("%w: permit %s", ErrNotFound, id)
		}
		if err != nil {
			return err
		}
		rec, ok := parsePermit(data)
		if !ok {
			return fmt.Errorf("%w: %s is no expiring permit (a Semaphore's or a peer's lease)", ErrIncompatible, id)
		}
		if rec.Expired {
			return fmt.Errorf("%w: permit %s expired", ErrNotFound, id)
		}
		// At the version read: the holder marking it expired, or
		// another Extend, wrote since: read it again.
		err = c.Commit(ctx, got, backend.Op{Kind: backend.OpSet, Node: got, Data: permitData(data, ttl, rec.Gen+1), IfVersion: true})
		switch {
		case errors.Is(err, backend.ErrGuard):
			return fmt.Errorf("%w: permit %s: %w", ErrNotFound, id, err)
		case errors.Is(err, ErrConflict) && try < extendTries:
			continue
		}
		return err
	}
}

// extendTries bounds the reads of an Extend that keeps colliding with
// other writers of the permit (other Extends).
const extendTries = 10

// ReleaseID releases the permit id from any process: its node is deleted,
// and its holder's Lease ends (ErrLost, ErrRevoked). A permit already gone
// is not an error.
func (p *PermitSemaphore) ReleaseID(ctx context.Context, id string) error {
	n, err := p.node(id)
	if err != nil {
		return err
	}
	return p.m.s.conn.Delete(ctx, n)
}

// permitID is a lease node's permit id: its name and its fencing token,
// so that an id never names a later lease of the same name.
func permitID(n backend.Node) string { return n.Name + "@" + strconv.FormatInt(n.Token, 10) }

// node returns the lease node a permit id names.
func (p *PermitSemaphore) node(id string) (backend.Node, error) {
	name, tok, ok := strings.Cut(id, "@")
	t, err := strconv.ParseInt(tok, 10, 64)
	if !ok || err != nil || t <= 0 || name == "" || strings.Contains(name, "/") {
		return backend.Node{}, fmt.Errorf("%w: permit id %q", ErrInvalidName, id)
	}
	return backend.Node{Path: backend.Join(p.m.leasesDir(), name), Name: name, Kind: backend.KindLease, Token: t}, nil
}

// permitData is a permit node's data: the identity in base (another
// permit's data or the session's identity) with ttl and gen.
func permitData(base []byte, ttl time.Duration, gen int64) []byte {
	var rec permitJSON
	_ = json.Unmarshal(base, &rec)
	rec.PermitTTLms = max(ttl.Milliseconds(), 1)
	rec.PermitAtMs = time.Now().UnixMilli()
	rec.Gen = gen
	b, _ := json.Marshal(rec)
	return b
}

func parsePermit(data []byte) (permitJSON, bool) {
	var rec permitJSON
	if len(data) < 2 || data[0] != '{' || json.Unmarshal(data, &rec) != nil || rec.PermitTTLms <= 0 {
		return permitJSON{}, false
	}
	return rec, true
}

func permitInfo(n backend.Node, data []byte) PermitInfo {
	info := PermitInfo{ID: permitID(n)}
	info.Holder, _ = ParseIdentity(data)
	if rec, ok := parsePermit(data); ok {
		info.TTL = time.Duration(rec.PermitTTLms) * time.Millisecond
		info.Set = time.UnixMilli(rec.PermitAtMs)
	}
	return info
}
