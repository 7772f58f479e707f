package redis

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
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

	// late counts the requests of rounds that ended without them (a
	// master that did not answer within the per-instance timeout, its
	// client still trying); Close waits for them.
	late sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	quit    chan struct{} // closed by Close: the workers stop
	workers sync.WaitGroup
}

type node struct {
	c *Client
	// late is set when the master missed a round's timeout, cleared when
	// it answers one in time: a round asks it on a goroutine of its own.
	late atomic.Bool

	// jobs reaches the master's worker, a goroutine started by the first
	// round that asks the master for rounds one request at a time: a
	// round then starts no goroutine for it, and the worker's stack has
	// grown to go-redis's depth once, not once per request (which costs
	// more than the request's own work in the client). A request that
	// finds the worker busy (still on a late request) runs on a goroutine
	// of its own. The worker stops when the Quorum or the master's Client
	// is closed.
	jobs    chan func()
	started atomic.Bool
}

// NewQuorum returns a Quorum over the given clients, one per master. It
// does no I/O. The first round starts one goroutine per master, which
// asks it for later rounds and stops when the Quorum or that master's
// Client is closed.
func NewQuorum(clients ...*Client) *Quorum {
	q := &Quorum{quit: make(chan struct{})}
	for _, c := range clients {
		q.nodes = append(q.nodes, &node{c: c, jobs: make(chan func())})
	}
	return q
}

// post hands job to n's worker if it is idle, starting the worker first
// if need be; false if the job must run on a goroutine of its own.
func (q *Quorum) post(n *node, job func()) bool {
	if !n.started.Load() {
		q.start(n)
	}
	select {
	case n.jobs <- job:
		return true
	default:
		return false
	}
}

// start starts n's worker, unless the Quorum is closed.
func (q *Quorum) start(n *node) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || n.started.Load() {
		return
	}
	n.started.Store(true)
	q.workers.Add(1)
	go func() {
		defer q.workers.Done()
		for {
			select {
			case job := <-n.jobs:
				job()
			case <-q.quit:
				return
			case <-n.c.hub.quit:
				return
			}
		}
	}()
}

// DialRedlock dials every URL (as Dial does) and returns a Quorum over
// them. It fails if any URL is malformed or refuses our credentials, and
// with an error wrapping ErrNoQuorum if fewer than a majority answer;
// masters that are down are kept, and used once they come back. Close the
// Quorum when done.
//
// A master's connection attempt (connecting and go-redis's handshake) is
// bounded by one second unless its URL sets dial_timeout and
// read_timeout, so that a master that accepts connections but never
// answers (paused, or cut off after the handshake) holds up DialRedlock
// and Close for about that long, not go-redis's default 5 s; lock requests
// have the per-instance timeout of Redlock.
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
			clients[i], errs[i] = dialMaster(ctx, u)
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
		opt, perr := masterOptions(urls[i])
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

// masterTimeout bounds a master's connection attempt (connecting, and
// the handshake, which go-redis bounds by its read timeout) unless its URL
// sets dial_timeout and read_timeout: go-redis's defaults, 5 s each, would
// let one master that accepts connections but never answers hold up a
// Quorum's dial and close far beyond any lock's per-instance timeout.
// Lock requests have their own, shorter, per-instance timeout.
const masterTimeout = time.Second

// masterOptions parses a master's URL for a Quorum.
func masterOptions(rawURL string) (*goredis.Options, error) {
	opt, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	if u, err := url.Parse(rawURL); err == nil {
		if !u.Query().Has("dial_timeout") {
			opt.DialTimeout = masterTimeout
		}
		if !u.Query().Has("read_timeout") {
			opt.ReadTimeout = masterTimeout
		}
	}
	return opt, nil
}

// dialMaster is Dial with masterOptions.
func dialMaster(ctx context.Context, rawURL string) (*Client, error) {
	opt, err := masterOptions(rawURL)
	if err != nil {
		return nil, err
	}
	return dialOptions(ctx, opt, Redact(rawURL))
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

// Close closes the clients of the masters, and waits for the requests a
// round left behind to end and for the masters' workers to stop.
func (q *Quorum) Close() error {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.quit)
	}
	q.mu.Unlock()
	var errs []error
	for _, n := range q.nodes {
		errs = append(errs, n.c.Close())
	}
	q.late.Wait()
	q.workers.Wait()
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
// marks each answer trusted or not by the restart guard. It returns when
// every master answered or the timeout passed, whichever is first: a
// master whose client does not give up at the deadline (one that accepts
// connections but never answers, while a new connection's handshake
// runs) gets a timeout error and is not waited for; its request ends in
// the background (Close waits for it). do must not read anything its
// caller changes after the round.
//
// One master that answered the last round in time is asked on the
// calling goroutine, and the others by their workers (see node.jobs):
// an uncontended round then wakes the caller no more than the masters'
// replies do, and starts no goroutine.
func (q *Quorum) round(ctx context.Context, timeout, ttl time.Duration, do func(ctx context.Context, n *node) reply) []reply {
	out := make([]reply, len(q.nodes))
	if len(q.nodes) == 0 {
		return out
	}
	ictx, cancel := context.WithTimeout(ctx, timeout)
	type answer struct {
		i int
		r reply
	}
	ask := func(n *node) reply {
		r := reply{err: n.c.readServer(ictx)}
		if r.err == nil {
			r = do(ictx, n)
		}
		if r.err != nil {
			r.err = fmt.Errorf("%s: %w", n.c, r.err)
		} else {
			r.trusted = n.c.srv.trusted(ttl)
		}
		return r
	}
	mine := -1 // the master asked on this goroutine
	for i := len(q.nodes) - 1; i >= 0; i-- {
		if !q.nodes[i].late.Load() {
			mine = i
			break
		}
	}
	// Join the rounds Close waits for, unless it has begun: a WaitGroup's
	// Add must not race its Wait.
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		for i, n := range q.nodes {
			out[i] = reply{err: fmt.Errorf("%s: %w", n.c, errClosed)}
		}
		cancel()
		return out
	}
	for i := range q.nodes {
		if i != mine {
			q.late.Add(1)
		}
	}
	q.mu.Unlock()
	answers := make(chan answer, len(q.nodes))
	for i, n := range q.nodes {
		if i == mine {
			continue
		}
		job := func() {
			defer q.late.Done()
			answers <- answer{i, ask(n)}
		}
		if !q.post(n, job) {
			go job()
		}
	}
	got := make([]bool, len(q.nodes))
	waiting := len(q.nodes)
	if mine >= 0 {
		out[mine], got[mine] = ask(q.nodes[mine]), true
		waiting--
	}
	for ; waiting > 0; waiting-- {
		select {
		case a := <-answers:
			out[a.i], got[a.i] = a.r, true
			continue
		case <-ictx.Done():
		}
		break
	}
	cancel()
	for done := false; !done; {
		select {
		case a := <-answers:
			out[a.i], got[a.i] = a.r, true // answered as the deadline passed
		default:
			done = true
		}
	}
	for i, n := range q.nodes {
		n.late.Store(!got[i] || isTimeout(out[i].err))
		if !got[i] {
			out[i] = reply{err: fmt.Errorf("%s: no answer within %v: %w", n.c, timeout, context.DeadlineExceeded)}
		}
	}
	return out
}
