package baton

import (
	"context"
	"fmt"
	"time"
)

// cleanupTimeout bounds the work done after a cancelled wait to remove the
// node it left.
const cleanupTimeout = 5 * time.Second

// blockerFunc returns the index in kids of the node that the node at index
// me must wait for, or -1 when it may proceed.
type blockerFunc func(kids []Node, me int) int

// enqueue creates our node in dir and lists its siblings, in one round trip
// where the backend can.
func enqueue(ctx context.Context, c Conn, dir, kind string, data []byte) (Node, []Node, error) {
	if cl, ok := c.(CreateLister); ok {
		return cl.CreateAndList(ctx, dir, kind, data, Ephemeral|Sequential)
	}
	n, err := c.Create(ctx, dir, kind, data, Ephemeral|Sequential)
	if err != nil {
		return Node{}, nil, err
	}
	kids, err := c.Children(ctx, dir)
	if err != nil {
		removeNode(ctx, c, n)
		return Node{}, nil, err
	}
	return n, kids, nil
}

// indexOf finds n among kids by path.
func indexOf(kids []Node, n Node) int {
	for i, k := range kids {
		if k.Path == n.Path {
			return i
		}
	}
	return -1
}

// waitTurn waits until our node me, listed in kids, has no blocker. It is
// the seeds' herd-free wait: each waiter watches only the one node it must
// follow. Nodes created after our listing always sort after us, so the
// listing taken at creation is a superset of everything that can block us:
// when a blocker goes we drop it and look again at the same listing, which
// costs no extra request. A blocker that is already gone answers its
// WaitGone at once.
func waitTurn(ctx context.Context, c Conn, kids []Node, me Node, blocker blockerFunc) error {
	kids = append([]Node(nil), kids...)
	for {
		i := indexOf(kids, me)
		if i < 0 {
			return fmt.Errorf("%w: our node %s is gone", ErrLost, me.Path)
		}
		b := blocker(kids, i)
		if b < 0 {
			return nil
		}
		if err := c.WaitGone(ctx, kids[b]); err != nil {
			return err
		}
		kids = append(kids[:b], kids[b+1:]...)
	}
}

// removeNode deletes n after a failed or cancelled wait, even when ctx is
// already done.
func removeNode(ctx context.Context, c Conn, n Node) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_ = c.Delete(ctx, n)
}

// prevOfKinds returns a blockerFunc that waits for the nearest earlier node
// whose kind is one of kinds.
func prevOfKinds(kinds ...string) blockerFunc {
	return func(kids []Node, me int) int {
		for j := me - 1; j >= 0; j-- {
			for _, k := range kinds {
				if kids[j].Kind == k {
					return j
				}
			}
		}
		return -1
	}
}
