package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/batonhq/baton"
)

// poolConns bounds a session's connections for queries; one more carries
// its notifications and renewals.
const poolConns = 3

// poolIdle is how long a query connection stays open unused: a session
// that only waits (a queued `baton lock`) soon holds its listening
// connection alone, so that a crowd of waiters takes one server
// connection each of max_connections, not two or more.
const poolIdle = 5 * time.Second

// Open connects to the database at dsn (a postgres:// or postgresql://
// URL or a key=value string, with libpq's parameters: sslmode,
// sslrootcert, …, as pgx reads them, and baton's own schema=), makes or
// migrates baton's schema if needed, and starts a session renewed in the
// background. The session is lost locally when no renewal has been
// confirmed for the TTL minus a margin, counted from the moment the last
// confirmed renewal was sent.
func Open(ctx context.Context, dsn string, opts ...Option) (*baton.Session, error) {
	c, err := open(ctx, dsn, opts...)
	if err != nil {
		return nil, err
	}
	return baton.NewSession(c, c.tel), nil
}

// Init makes or migrates baton's schema in the database at dsn (the
// schema= parameter or WithSchema names it) and returns its version. It is
// what Open does on first use, for a user who has the CREATE privilege
// where the clients do not.
func Init(ctx context.Context, dsn string, opts ...Option) (int, error) {
	o, cfg, err := parse(dsn, opts)
	if err != nil {
		return 0, err
	}
	db, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		return 0, err
	}
	defer closeQuietly(db)
	if err := migrate(ctx, db, o.schema); err != nil {
		return 0, err
	}
	return version(ctx, db, o.schema)
}

// SplitSchema takes baton's schema= parameter out of a postgres:// URL
// (or key=value string), returning what is left for pgx and the schema
// ("" if not given).
func SplitSchema(dsn string) (rest, schema string, err error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		// The URL is libpq's, not Go's (a unix socket's directory may be
		// the host, %2F-encoded), and pgx parses it as libpq does; the
		// other parameters go to it as written: libpq decodes %XX but not
		// "+", so re-encoding them (url.Values.Encode writes a space as
		// "+") would change options=-c%20… into another value.
		base, query, _ := strings.Cut(dsn, "?")
		var kept []string
		for _, pair := range strings.Split(query, "&") {
			k, v, _ := strings.Cut(pair, "=")
			if key, err := url.QueryUnescape(k); err == nil && key == "schema" {
				if schema, err = url.PathUnescape(v); err != nil {
					return "", "", fmt.Errorf("postgres: bad URL: schema: %w", err)
				}
				continue
			}
			if pair != "" {
				kept = append(kept, pair)
			}
		}
		if len(kept) == 0 {
			return base, schema, nil
		}
		return base + "?" + strings.Join(kept, "&"), schema, nil
	}
	var kept []string
	for _, f := range strings.Fields(dsn) {
		if v, ok := strings.CutPrefix(f, "schema="); ok {
			schema = strings.Trim(v, "'")
			continue
		}
		kept = append(kept, f)
	}
	return strings.Join(kept, " "), schema, nil
}

func parse(dsn string, opts []Option) (options, *pgxpool.Config, error) {
	o := options{ttl: baton.DefaultTTL}
	for _, opt := range opts {
		opt(&o)
	}
	rest, schema, err := SplitSchema(dsn)
	if err != nil {
		return o, nil, err
	}
	if o.schema == "" {
		o.schema = schema
	}
	if o.schema == "" {
		o.schema = DefaultSchema
	}
	if err := validSchema(o.schema); err != nil {
		return o, nil, err
	}
	cfg, err := pgxpool.ParseConfig(rest)
	if err != nil {
		return o, nil, fmt.Errorf("postgres: %w", err)
	}
	return o, cfg, nil
}

func open(ctx context.Context, dsn string, opts ...Option) (*conn, error) {
	o, cfg, err := parse(dsn, opts)
	if err != nil {
		return nil, err
	}
	if o.ttl < MinTTL {
		return nil, fmt.Errorf("%w: %v is below the postgres backend's minimum %v", baton.ErrInvalidTTL, o.ttl, MinTTL)
	}
	// The TTL is sent in whole microseconds, PostgreSQL's precision.
	ttl := o.ttl.Truncate(time.Microsecond)
	cfg.MaxConns = poolConns
	cfg.MinConns = 0
	cfg.MaxConnIdleTime = poolIdle
	cfg.HealthCheckPeriod = poolIdle / 5
	// Statements by name are prepared per connection; the simple cache
	// keeps a pooler in transaction mode (PgBouncer) from seeing them.
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	// Children and CreateAndList read a dir in a statement of their own
	// after taking its key, and rely on READ COMMITTED's fresh snapshot
	// there (the schema's lockkey2), whatever the database's default.
	cfg.AfterConnect = func(ctx context.Context, pc *pgx.Conn) error {
		_, err := pc.Exec(ctx, "SET default_transaction_isolation = 'read committed'")
		return err
	}

	// The listening connection first: it checks the schema, migrates it if
	// need be, and opens the session, so that no notification to the
	// session can be sent before it listens.
	lc, err := pgx.ConnectConfig(ctx, cfg.ConnConfig.Copy())
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(context.WithoutCancel(ctx), cfg)
	if err != nil {
		closeQuietly(lc)
		return nil, fmt.Errorf("postgres: %w", err)
	}
	fail := func(err error) (*conn, error) {
		pool.Close()
		closeQuietly(lc)
		return nil, err
	}
	if err := checkPooling(ctx, lc, pool); err != nil {
		return fail(err)
	}
	v, err := version(ctx, lc, o.schema)
	if err != nil {
		return fail(fmt.Errorf("postgres: %w", err))
	}
	if v != SchemaVersion {
		if err := migrate(ctx, lc, o.schema); err != nil {
			if v == 0 {
				return fail(fmt.Errorf("%w: schema %s missing and not made (run `baton postgres init` as a user with CREATE): %w", ErrSchema, o.schema, err))
			}
			return fail(err)
		}
	}
	q := newQueries(o.schema)
	sent := time.Now()
	var id int64
	if err := lc.QueryRow(ctx, q.open, pgInterval(ttl)).Scan(&id); err != nil {
		return fail(fmt.Errorf("postgres: open session: %w", err))
	}
	if _, err := lc.Exec(ctx, "LISTEN "+pgx.Identifier{q.channel(id)}.Sanitize()); err != nil {
		endQuietly(lc, q, id)
		return fail(fmt.Errorf("postgres: listen: %w", err))
	}
	c := newConn(pool, cfg.ConnConfig, lc, q, id, ttl, o)
	c.expiry.set(sent.Add(ttl - margin(ttl)))
	c.bg.Add(1)
	go c.run(lc, sent)
	return c, nil
}

// pgInterval is d as a PostgreSQL interval literal.
func pgInterval(d time.Duration) string {
	return strconv.FormatInt(d.Microseconds(), 10) + " microseconds"
}

// margin is how long before the server could expire a session the client
// gives it up: the etcd backend's rule, a tenth of the TTL.
func margin(ttl time.Duration) time.Duration { return ttl / 10 }

// IsAuthError reports whether err is the server refusing the credentials
// (a wrong password, a user or database pg_hba.conf does not let in).
func IsAuthError(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "28P01" || pe.Code == "28000")
}

// endQuietly deletes session id on lc, waiting at most closeTimeout: the
// session of an Open that failed after making it.
func endQuietly(lc *pgx.Conn, q *queries, id int64) {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	_, _ = lc.Exec(ctx, q.end, id)
}
