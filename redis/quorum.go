package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Quorum is a set of N independent Redis masters (no replication between
// them) on which Redlocks are built. It remembers each master's run_id,
// shared by every Redlock on it, to keep a restarted master out of the
// vote (see Redlock).
type Quorum struct {
	nodes  []*node
	waited waited // keys whose last acquisition here had to wait
}

type node struct {
	c *Client
}

// NewQuorum returns a Quorum over the given clients, one per master. It
// does no I/O; Close does not close the clients.
func NewQuorum(clients ...*Client) *Quorum {
	q := &Quorum{}
	for _, c := range clients {
		q.nodes = append(q.nodes, &node{c: c})
	}
	return q
}

// DialRedlock dials every URL (as Dial does) and returns a Quorum over
// them. It fails if any URL is malformed or refuses our credentials, and
// with an error wrapping ErrNoQuorum if fewer than a majority answer;
// masters that are down are kept, and used once they come back. Close the
// Quorum when done.
func DialRedlock(ctx context.Context, urls []string) (*Quorum, error) {
	if len(urls) == 0 {
		return nil, errors.New("redis: redlock needs at least one instance")
	}
	clients := make([]*Client, len(urls))
	errs := make([]error, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			clients[i], errs[i] = Dial(ctx, u)
		}()
	}
	wg.Wait()
	up := 0
	var down []error
	for i, err := range errs {
		if err == nil {
			up++
			continue
		}
		if IsAuthError(err) || refused(err) || !strings.Contains(err.Error(), "connect to") {
			closeAll(clients)
			return nil, err
		}
		down = append(down, err)
		// Keep a client for the master that is down: it reconnects.
		opt, perr := parseURL(urls[i])
		if perr != nil {
			closeAll(clients)
			return nil, err
		}
		clients[i] = NewClient(goredis.NewClient(opt))
		clients[i].own, clients[i].url = true, Redact(urls[i])
	}
	if up < len(urls)/2+1 {
		closeAll(clients)
		return nil, fmt.Errorf("%w: %d of %d answered, need %d: %w", ErrNoQuorum, up, len(urls), len(urls)/2+1, errors.Join(down...))
	}
	q := NewQuorum(clients...)
	return q, nil
}

func closeAll(cs []*Client) {
	for _, c := range cs {
		if c != nil {
			_ = c.Close()
		}
	}
}

// Size is the number of masters.
func (q *Quorum) Size() int { return len(q.nodes) }

// Close closes the clients of the masters.
func (q *Quorum) Close() error {
	var errs []error
	for _, n := range q.nodes {
		errs = append(errs, n.c.Close())
	}
	return errors.Join(errs...)
}

func (q *Quorum) majority() int { return len(q.nodes)/2 + 1 }

// reply is one master's answer in a round.
type reply struct {
	g       grant // acquire: the script's answer
	val     int64 // other scripts: their integer answer
	err     error
	trusted bool // the master may count toward a quorum
}

// round runs do on every master in parallel, each bounded by timeout, and
// marks each answer trusted or not by the restart guard. The last master
// runs on the calling goroutine.
func (q *Quorum) round(ctx context.Context, timeout, ttl time.Duration, do func(ctx context.Context, n *node) reply) []reply {
	out := make([]reply, len(q.nodes))
	if len(q.nodes) == 0 {
		return out
	}
	ictx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	one := func(i int, n *node) {
		r := n.check(ictx)
		if r.err == nil {
			r = do(ictx, n)
		}
		if r.err != nil {
			r.err = fmt.Errorf("%s: %w", n.c, r.err)
		} else {
			r.trusted = n.c.srv.trusted(ttl)
		}
		out[i] = r
	}
	var wg sync.WaitGroup
	last := len(q.nodes) - 1
	for i, n := range q.nodes[:last] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			one(i, n)
		}()
	}
	one(last, q.nodes[last])
	wg.Wait()
	return out
}

// check reads the master's run_id when no connection hook has: for a
// client NewClient could not hook, or one whose connections predate the
// hook. Once known, the hook keeps it current.
func (n *node) check(ctx context.Context) reply {
	if n.c.srv.hooked && n.c.srv.known() {
		return reply{}
	}
	info, err := n.c.info(ctx)
	if err != nil {
		return reply{err: err}
	}
	n.c.srv.saw(parseInfo(info))
	return reply{}
}
