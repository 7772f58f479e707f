package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
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
	nodes []*node
}

type node struct {
	c *Client

	mu      sync.Mutex
	runID   string
	changed time.Time // when we saw run_id change (monotonic)
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
		if IsAuthError(err) || !strings.Contains(err.Error(), "connect to") {
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
	val     int64
	err     error
	trusted bool // the master may count toward a quorum
}

// round runs script on every master in parallel, each bounded by timeout,
// together with INFO server on the same connection, so each answer is
// tied to the run_id of the process that gave it.
func (q *Quorum) round(ctx context.Context, timeout, ttl time.Duration, s *goredis.Script, keys []string, args ...any) []reply {
	out := make([]reply, len(q.nodes))
	var wg sync.WaitGroup
	for i, n := range q.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ictx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			out[i] = n.run(ictx, ttl, s, keys, args...)
		}()
	}
	wg.Wait()
	return out
}

func (n *node) run(ctx context.Context, ttl time.Duration, s *goredis.Script, keys []string, args ...any) reply {
	var info *goredis.StringCmd
	var res *goredis.Cmd
	exec := func(eval bool) error {
		_, err := n.c.rc.Pipelined(ctx, func(p goredis.Pipeliner) error {
			info = p.Info(ctx, "server")
			if eval {
				res = s.Eval(ctx, p, keys, args...)
			} else {
				res = s.EvalSha(ctx, p, keys, args...)
			}
			return nil
		})
		return err
	}
	err := exec(false)
	if err != nil && goredis.HasErrorPrefix(res.Err(), "NOSCRIPT") {
		err = exec(true)
	}
	if err != nil {
		return reply{err: fmt.Errorf("%s: %w", n.c, err)}
	}
	v, err := res.Int64()
	if err != nil {
		return reply{err: fmt.Errorf("%s: %w", n.c, err)}
	}
	runID, uptime := parseInfo(info.Val())
	return reply{val: v, trusted: n.trust(runID, uptime, ttl)}
}

// trust records the run_id seen and says whether the master's answer may
// count: not if its run_id changed less than a ttl ago, nor if it has been
// up for less than a ttl (it may have lost keys a holder relies on).
func (n *node) trust(runID string, uptime, ttl time.Duration) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := time.Now()
	if runID == "" {
		return false
	}
	if n.runID != "" && n.runID != runID {
		n.changed = now
	}
	n.runID = runID
	if !n.changed.IsZero() && now.Sub(n.changed) < ttl {
		return false
	}
	return uptime >= ttl
}

// parseInfo reads run_id and uptime from INFO server.
func parseInfo(s string) (runID string, uptime time.Duration) {
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "run_id:"); ok {
			runID = v
		} else if v, ok := strings.CutPrefix(line, "uptime_in_seconds:"); ok {
			sec, _ := strconv.ParseInt(v, 10, 64)
			uptime = time.Duration(sec) * time.Second
		}
	}
	return runID, uptime
}
