package baton

import (
	"context"
	"errors"
	"time"

	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/codec"
)

// SharedCount is a counter all clients share, in Apache Curator's
// SharedCount layout: the persistent node NAME holds the count as a 4-byte
// big-endian int (on etcd, the key NAME), made with the seed value by the
// first client that reads it. Every value carries the version it was read
// at (ZooKeeper's data version, etcd's ModRevision), and TrySet writes only
// if the count is still at that version. Curator's SharedCount on the same
// path reads what baton writes and the other way round.
//
// Versions are only ever compared for equality, never ordered, so
// ZooKeeper's int32 version wrapping past 2^31-1 does not freeze the count
// (Curator's CURATOR-688); at the one version ZooKeeper cannot check, -1,
// TrySet reports a conflict and Set moves the version on.
type SharedCount struct {
	node counterNode
	seed int32
}

// VersionedCount is a count and the version it was read at.
type VersionedCount struct {
	Value int32
	// Version is the count node's data version (Node.Version).
	Version int64
	node    backend.Node
}

// NewSharedCount returns the shared count NAME, which is seed until first
// set. It does no I/O.
func NewSharedCount(s *Session, name string, seed int32) *SharedCount {
	return &SharedCount{node: newCounterNode(s, name), seed: seed}
}

// Name is the count's node.
func (c *SharedCount) Name() string { return c.node.name }

// Get reads the count and its version, making the node with the seed if
// it is missing.
func (c *SharedCount) Get(ctx context.Context) (VersionedCount, error) {
	data, n, _, err := c.node.read(ctx, codec.CountBytes(c.seed))
	if err != nil {
		return VersionedCount{}, err
	}
	v, err := codec.ParseCount(data)
	if err != nil {
		return VersionedCount{}, err
	}
	return VersionedCount{Value: v, Version: n.Version, node: n}, nil
}

// Set writes v whatever the count is (Curator's setCount).
func (c *SharedCount) Set(ctx context.Context, v int32) error {
	for range maxCounterTries {
		_, n, _, err := c.node.read(ctx, codec.CountBytes(v))
		if err != nil {
			return err
		}
		err = c.node.set(ctx, n, codec.CountBytes(v), false)
		if !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	return ErrConflict
}

// TrySet writes v only if the count is still at prev's version (Curator's
// trySetCount). It reports false, with no error, when the count changed
// since prev was read: read it again and retry.
func (c *SharedCount) TrySet(ctx context.Context, prev VersionedCount, v int32) (bool, error) {
	if prev.node.Path == "" {
		return false, nil // not read from the store
	}
	err := c.node.set(ctx, prev.node, codec.CountBytes(v), true)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrConflict), errors.Is(err, ErrNotFound):
		return false, nil
	}
	return false, err
}

// Watch sends the count now and after every change (Curator's
// SharedCountListener), until ctx ends or the session does; then it
// closes the channel. A reader too slow to take every value sees the
// latest. A failed read or watch is retried with a growing pause.
func (c *SharedCount) Watch(ctx context.Context) <-chan VersionedCount {
	out := make(chan VersionedCount, 1)
	go func() {
		defer close(out)
		if c.node.bad != nil {
			return // a bad name: nothing to watch
		}
		backoff := 10 * time.Millisecond
		last := int64(-1 << 62)
		for ctx.Err() == nil && c.node.s.Err() == nil {
			cur, err := c.Get(ctx)
			if err == nil && cur.Version != last {
				last = cur.Version
				select {
				case <-out: // drop a value not yet taken: the latest counts
				default:
				}
				out <- cur
			}
			if err == nil {
				err = c.node.s.conn.WaitChanged(ctx, cur.node)
			}
			if err == nil || errors.Is(err, ErrNotFound) {
				backoff = 10 * time.Millisecond
				continue
			}
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
			backoff = min(2*backoff, time.Second)
		}
	}()
	return out
}
