package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrTransactionPooling is wrapped by the error Open returns when the
// server at the URL does not keep a session's LISTEN between its
// transactions: PgBouncer (or another pooler) in transaction or statement
// pooling mode. baton's waits are LISTENs held by one connection for the
// session's life, so it refuses such a pool rather than wait on
// notifications that would go to another client. Connect to PostgreSQL
// directly, or through a pool in session mode.
var ErrTransactionPooling = errors.New("postgres: the connection does not keep LISTEN between transactions " +
	"(PgBouncer in transaction or statement pooling mode?): connect to PostgreSQL directly or through a pool in session mode")

// poolingWait bounds how long the check waits for its own notification on
// a connection that keeps its session; a direct connection has it after
// one round trip.
const poolingWait = 5 * time.Second

// checkPooling runs checkSession on lc, the session's listening
// connection before it listens, and a connection of the session's pool,
// which goes back to the pool for the session's queries.
func checkPooling(ctx context.Context, lc *pgx.Conn, pool *pgxpool.Pool) error {
	other, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: connect: %w", err)
	}
	defer other.Release() // the pool drops it if the check left it in a transaction or closed
	return checkSession(ctx, lc, other.Conn())
}

// checkSession makes sure that listen keeps its session between
// transactions, as a direct connection (or a session pool) does:
//
//  1. listen LISTENs on the check's channel and reads its backend's pid;
//  2. other opens a transaction and reads its backend's pid, which must
//     differ: a transaction pool hands the server connection listen just
//     let go of to the next transaction (PgBouncer reuses the most recent
//     one first), and other's open transaction now keeps it busy;
//  3. listen must still be on the same backend, still listening;
//  4. other NOTIFYs a payload of its own and commits, and listen must
//     receive that notification (poolingWait at most; a direct connection has it after
//     one round trip).
//
// Any step that fails is ErrTransactionPooling. A pool that hands out its
// server connections in turn (PgBouncer's server_round_robin) can pass
// steps 2 and 3; the notification, sent to a backend that serves no client
// then, never reaches listen, and the check fails after poolingWait.
//
// listen must not be listening on anything else yet: another
// notification that arrives during the check (another client's check) is
// dropped.
func checkSession(ctx context.Context, listen, other *pgx.Conn) (err error) {
	// One channel for every client's check, and a payload of our own: the
	// statements' texts stay the same (pg_stat_statements keeps one entry
	// for each, not one per session).
	const ch = "baton_pooling_check"
	token := uuid.NewString()
	// The simple protocol throughout: nothing prepared, which a
	// transaction pool would lose too, and several statements in one
	// message are one transaction.
	query := func(c *pgx.Conn, sql string) ([]string, error) {
		res, err := c.PgConn().Exec(ctx, sql).ReadAll()
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "08P01" && strings.Contains(pe.Message, "pooling mode") {
			// PgBouncer in statement mode refuses a transaction block.
			return nil, fmt.Errorf("%w (the server said: %s)", ErrTransactionPooling, pe.Message)
		}
		if err != nil {
			return nil, fmt.Errorf("postgres: session check: %w", err)
		}
		var vals []string
		for _, r := range res {
			for _, row := range r.Rows {
				for _, v := range row {
					vals = append(vals, string(v))
				}
			}
		}
		return vals, nil
	}
	l, err := query(listen, `LISTEN `+ch+`; SELECT pg_backend_pid()`)
	if err != nil {
		return err
	}
	defer func() {
		if _, uerr := query(listen, `UNLISTEN `+ch); err == nil && uerr != nil {
			err = uerr
		}
	}()
	o, err := query(other, `BEGIN; SELECT pg_backend_pid()`)
	if err != nil {
		return err
	}
	committed := false
	defer func() {
		if !committed {
			_, _ = query(other, "ROLLBACK")
		}
	}()
	if len(l) != 1 || len(o) != 1 || l[0] == o[0] {
		return ErrTransactionPooling
	}
	again, err := query(listen, `SELECT pg_backend_pid(), count(*) FROM pg_listening_channels() c WHERE c = '`+ch+`'`)
	if err != nil {
		return err
	}
	if len(again) != 2 || again[0] != l[0] || again[1] != "1" {
		return ErrTransactionPooling
	}
	if _, err := query(other, `SELECT pg_notify('`+ch+`', '`+token+`'); COMMIT`); err != nil {
		return err
	}
	committed = true
	wctx, cancel := context.WithTimeout(ctx, poolingWait)
	defer cancel()
	for {
		n, err := listen.WaitForNotification(wctx)
		switch {
		case err == nil && n.Channel == ch && n.Payload == token:
			return nil
		case err == nil:
			continue
		case ctx.Err() != nil:
			return ctx.Err()
		case wctx.Err() != nil:
			return ErrTransactionPooling
		default:
			return fmt.Errorf("postgres: session check: %w", err)
		}
	}
}
