package zk

import (
	"context"
	"errors"
	"fmt"

	gozk "github.com/go-zookeeper/zk"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// errConnLoss marks a request whose connection was lost: it may or may
// not have been applied. Callers retry once reconnected, or resolve it.
var errConnLoss = errors.New("zk: connection lost")

// maxRetries bounds the retries of one call across connection losses; the
// session's own deadline normally ends them first.
const maxRetries = 50

// call runs one go-zookeeper request, which takes no context, and returns
// as soon as it completes, ctx ends or the session ends. An abandoned
// request still completes in the background; f must only write variables
// the caller no longer reads after an error.
func (c *conn) call(ctx context.Context, f func() error) error {
	if err := c.Err(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if ctx.Done() == nil {
		// Nothing can cancel the call: run it here and save a goroutine
		// hand-off per request. It still ends with the session: closing
		// the session fails go-zookeeper's pending requests.
		return c.mapErr(f())
	}
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	select {
	case err := <-ch:
		return c.mapErr(err)
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return c.Err()
	}
}

// retry is call for idempotent requests: it retries across connection
// losses once the session is connected again.
func (c *conn) retry(ctx context.Context, f func() error) error {
	for i := 0; ; i++ {
		err := c.call(ctx, f)
		if !errors.Is(err, errConnLoss) || i == maxRetries {
			return err
		}
		if err := c.waitUp(ctx); err != nil {
			return err
		}
	}
}

// waitUp waits until the session is connected to a server.
func (c *conn) waitUp(ctx context.Context) error {
	c.mu.Lock()
	up := c.up
	c.mu.Unlock()
	select {
	case <-up:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return c.Err()
	}
}

// unknown reports a write whose connection was lost before its reply. It
// first waits to learn whether the session survived: if it did not, that
// is the error to report (IsSessionGone); if it did, the write's outcome
// stays unknown and the error says so.
func (c *conn) unknown(ctx context.Context, what string, err error) error {
	if werr := c.waitUp(ctx); werr != nil {
		return werr
	}
	return fmt.Errorf("zk: %s: outcome unknown: %w", what, err)
}

// mapErr turns go-zookeeper's errors into baton's.
func (c *conn) mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, gozk.ErrSessionExpired):
		c.end(baton.ErrSessionExpired)
		return c.Err()
	case errors.Is(err, gozk.ErrClosing):
		if e := c.Err(); e != nil {
			return e
		}
		return baton.ErrClosed
	case errors.Is(err, gozk.ErrConnectionClosed), errors.Is(err, gozk.ErrNoServer):
		if e := c.Err(); e != nil {
			return e
		}
		return fmt.Errorf("%w: %w", errConnLoss, err)
	case errors.Is(err, gozk.ErrNoNode):
		return fmt.Errorf("%w: %w", baton.ErrNotFound, err)
	case errors.Is(err, gozk.ErrNodeExists):
		return fmt.Errorf("%w: %w", baton.ErrExists, err)
	case errors.Is(err, gozk.ErrNoAuth):
		return fmt.Errorf("zk: the ACL does not grant this session's identity that access (deletes and creates are checked against the parent's ACL; see WithAuth): %w: %w", baton.ErrPermission, err)
	case errors.Is(err, gozk.ErrInvalidACL):
		return fmt.Errorf(`zk: the server refused the ACL (the "auth" scheme needs credentials, see WithAuth): %w`, err)
	case errors.Is(err, gozk.ErrInvalidPath), errors.Is(err, gozk.ErrBadArguments):
		return fmt.Errorf("%w: %w", baton.ErrInvalidName, err)
	}
	return fmt.Errorf("zk: %w", err)
}

// statNode builds a Node from a server path and its Stat.
func (c *conn) statNode(path string, st *gozk.Stat) backend.Node {
	p := c.rel(path)
	n := backend.Node{Path: p, Name: base(p)}
	pn := parseName(n.Name)
	n.Kind = pn.kind
	n.Seq = int64(pn.seq)
	if !pn.sequential {
		n.Seq = maxSeq
	}
	if st != nil {
		n.Token = st.Czxid
		n.Version = int64(st.Version)
		n.Owner = ownerID(st.EphemeralOwner)
		n.Dir = st.Cversion != 0 || st.NumChildren > 0
		if st.Ctime > 0 {
			n.Created = msTime(st.Ctime)
		}
	}
	return n
}
