package baton

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/backend"
)

// RevokeMarker is what a revocation request writes into the holder's
// node: Apache Curator's revoke message, so that Curator's
// Revoker.attemptRevoke and Revoke are one protocol.
var RevokeMarker = []byte("__REVOKE__")

// Revocable makes a Mutex's holds revocable, as Curator's
// InterProcessMutex.makeRevocable does: while it holds the lock, the
// holder watches the data of its own lock node, and when the data becomes
// RevokeMarker (written by Revoke, `baton revoke NAME` or Curator's
// Revoker) the lease's RevokeRequested channel closes. Revocation is
// cooperative: the holder decides to Unlock; nothing is taken from it. A
// request written while the contender still waited in line is seen as
// soon as it holds.
//
// It costs one read and one data watch per hold. It is distinct from
// force-release (deleting the holder's node), which ends the lease as lost
// with ErrRevoked.
func Revocable() MutexOption {
	return func(m *Mutex) { m.revocable = true }
}

// Revoke asks the current holder of the lock name (the first contender
// in line, a Mutex or a Curator InterProcessMutex holder) to let go, by
// writing RevokeMarker into its node, and returns that node. The write is
// exact about incarnations: it never reaches a later node of the same
// name. It returns an error wrapping ErrNotHeld when nobody holds name.
// A holder that did not ask for revocation (Revocable, Curator's
// makeRevocable) is not told; its node's data (the identity baton writes)
// is replaced all the same.
func Revoke(ctx context.Context, s *Session, name string) (backend.Node, error) {
	for range 10 {
		kids, err := s.conn.Children(ctx, name)
		if err != nil {
			return backend.Node{}, err
		}
		var holder *backend.Node
		for i := range kids {
			if kids[i].Kind == backend.KindLock {
				holder = &kids[i]
				break
			}
		}
		if holder == nil {
			return backend.Node{}, fmt.Errorf("%w: nobody holds %s", ErrNotHeld, name)
		}
		// A listing need not carry the Token: read it, so that the write
		// reaches this incarnation only.
		_, n, err := s.conn.Get(ctx, holder.Path)
		if errors.Is(err, ErrNotFound) {
			continue // released meanwhile: look again
		}
		if err != nil {
			return backend.Node{}, err
		}
		err = s.conn.Commit(ctx, backend.Node{}, backend.Op{Kind: backend.OpSet, Node: n, Data: RevokeMarker})
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return backend.Node{}, err
		}
		return n, nil
	}
	return backend.Node{}, fmt.Errorf("revoke %s: the holder keeps changing", name)
}

// watchRevoke closes l's RevokeRequested once our node n carries
// RevokeMarker, until ctx ends or n is gone. Failed reads and watches are
// retried with a growing pause (the loss of the node or session is the
// hold's own watch's to report).
func watchRevoke(ctx context.Context, s *Session, n backend.Node, l *Lease) {
	backoff := 10 * time.Millisecond
	for ctx.Err() == nil && s.Err() == nil {
		data, cur, err := s.conn.Get(ctx, n.Path)
		if err == nil && cur.Token != 0 && n.Token != 0 && cur.Token != n.Token {
			return // another incarnation: ours is gone
		}
		if err == nil {
			if bytes.Equal(data, RevokeMarker) {
				l.inner().RequestRevoke()
				return
			}
			err = s.conn.WaitChanged(ctx, cur)
			if err == nil {
				backoff = 10 * time.Millisecond
				continue
			}
		}
		if errors.Is(err, ErrNotFound) || IsSessionGone(err) {
			return
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		backoff = min(2*backoff, time.Second)
	}
}
