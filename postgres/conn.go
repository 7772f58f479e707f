package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/telemetry"
)

// conn implements backend.Conn on one row of the sessions table.
type conn struct {
	pool   *pgxpool.Pool
	lcfg   *pgx.ConnConfig // the session connection's (run), to dial it again
	q      *queries
	id     int64
	hexID  string
	by     string // id in decimal, as notifications name the session that sent them
	ttl    time.Duration
	tel    baton.Telemetry
	drop   *dropper
	expiry deadline

	life    context.Context // cancelled when the session ends
	endLife context.CancelFunc
	done    chan struct{}
	once    sync.Once
	errMu   sync.Mutex
	err     error
	bg      sync.WaitGroup // run
	fg      sync.WaitGroup // forget's retries

	waitMu sync.Mutex
	waits  map[int64]chan struct{} // watch id → closed when it fires
	wakeMu sync.Mutex
	wake   chan struct{} // closed (and replaced) when notifications may have been lost
	wids   atomic.Int64
	events atomic.Int64

	telemetry.Renewals
}

var (
	_ backend.Conn         = (*conn)(nil)
	_ backend.WatchCounter = (*conn)(nil)
	_ backend.Expirer      = (*conn)(nil)
	_ backend.Renewer      = (*conn)(nil)
	_ backend.Backender    = (*conn)(nil)
	_ backend.CreateLister = (*conn)(nil)
	_ backend.Relister     = (*conn)(nil)
)

func newConn(pool *pgxpool.Pool, lcfg *pgx.ConnConfig, lc *pgx.Conn, q *queries, id int64, ttl time.Duration, o options) *conn {
	life, end := context.WithCancel(context.Background())
	return &conn{
		pool: pool, lcfg: lcfg, q: q, id: id, hexID: strconv.FormatInt(id, 16), by: strconv.FormatInt(id, 10),
		ttl: ttl, tel: o.telemetry, drop: o.dropper,
		life: life, endLife: end, done: make(chan struct{}),
		waits: map[int64]chan struct{}{}, wake: make(chan struct{}),
	}
}

// ID is the session's id in hex.
func (c *conn) ID() string            { return c.hexID }
func (c *conn) TTL() time.Duration    { return c.ttl }
func (c *conn) Done() <-chan struct{} { return c.done }
func (c *conn) WatchEvents() int64    { return c.events.Load() }

// Backend is "postgres".
func (c *conn) Backend() string { return "postgres" }

func (c *conn) Err() error {
	c.errMu.Lock()
	defer c.errMu.Unlock()
	return c.err
}

// Expiry is the loss deadline: the send time of the last confirmed
// renewal plus the TTL minus a margin; the zero Time once the session has
// ended.
func (c *conn) Expiry() time.Time {
	if c.Err() != nil {
		return time.Time{}
	}
	return c.expiry.get()
}

// end closes the session with err; only the first call counts.
func (c *conn) end(err error) {
	c.once.Do(func() {
		c.errMu.Lock()
		c.err = err
		c.errMu.Unlock()
		c.endLife()
		close(c.done)
	})
}

// Close deletes the session (its ephemeral nodes and watches go with it)
// and closes its connections.
func (c *conn) Close(ctx context.Context) error {
	live := c.Err() == nil
	c.end(baton.ErrClosed)
	var err error
	if live {
		// The delete runs on a context of its own: the session's has ended.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.ttl)
		_, err = c.pool.Exec(dctx, c.q.end, c.id)
		cancel()
	}
	c.bg.Wait()
	c.fg.Wait()
	c.pool.Close()
	if err != nil && ctx.Err() == nil {
		// The server expires the session a TTL after its last renewal.
		return fmt.Errorf("postgres: close session %s: %w", c.hexID, err)
	}
	return nil
}

// deadline is a time read and written from several goroutines.
type deadline struct {
	mu sync.Mutex
	t  time.Time
}

func (d *deadline) get() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.t
}

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	d.t = t
	d.mu.Unlock()
}

// Errors the schema's functions raise.
const (
	codeExpired = "BA001" // the caller's session is gone
	codeExists  = "BA002" // a node of that name exists
)

// retryable says a statement failed without effect and may run again: a
// deadlock or serialization failure (the transaction was rolled back).
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

// connLost says err is the loss of a connection (refused, reset, closed,
// timed out, the server shutting down or restarting): the statement may or
// may not have been applied.
func connLost(err error) bool {
	var (
		pe *pgconn.PgError
		ce *pgconn.ConnectError
		ne net.Error
	)
	if errors.As(err, &pe) {
		// Class 08 connection exception, 57P01-57P03 shutdown, crash,
		// starting up.
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	return errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || pgconn.SafeToRetry(err)
}

// Backoff between the tries of a statement whose connection was lost.
const (
	firstBackoff = 20 * time.Millisecond
	maxBackoff   = 500 * time.Millisecond
)

// do runs f with a context that also ends with the session. It runs f
// again after a deadlock, and, while the session and ctx last, after the
// loss of a connection when idempotent (a statement applied twice does
// what it did once) or when the statement was never sent: a store cut off
// for less than the session's TTL costs a wait, not an error, as on
// ZooKeeper. It turns f's error into the session's once the session has
// ended, or ctx's.
func (c *conn) do(ctx context.Context, idempotent bool, f func(ctx context.Context) error) error {
	if err := c.Err(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	qctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.life, cancel)
	defer stop()
	var err error
	backoff := firstBackoff
	for deadlocks := 0; ; {
		err = f(qctx)
		if err == nil || qctx.Err() != nil {
			break
		}
		if retryable(err) && deadlocks < 10 {
			deadlocks++
			continue
		}
		if !connLost(err) || !(idempotent || pgconn.SafeToRetry(err)) {
			break
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-qctx.Done():
			t.Stop()
		}
		backoff = min(2*backoff, maxBackoff)
	}
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == codeExpired {
		c.end(baton.ErrSessionExpired)
	}
	if serr := c.Err(); serr != nil {
		return serr
	}
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return err
}
