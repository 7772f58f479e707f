package postgres

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batontest"
	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/internal/proxy"
)

var schemas atomic.Int64

// newSchema names a schema of its own for one harness.
func newSchema() string { return fmt.Sprintf("t%d_%d", time.Now().UnixNano()%1e6, schemas.Add(1)) }

// admin is a connection straight to srv (not through any session's
// proxy), closed at the end of t.
func admin(t testing.TB, srv *pgtest.Server) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db, err := pgx.Connect(ctx, srv.URL(""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close(context.Background()) })
	return db
}

// harness drives the conformance suite on srv, in a schema of its own.
// Every session goes through a TCP proxy of its own, so that one session
// can be partitioned without the others.
func harness(t *testing.T, srv *pgtest.Server) batontest.Harness {
	schema := newSchema()
	db := admin(t, srv)
	var dbMu sync.Mutex
	sql := func(t testing.TB, q string, args ...any) pgx.Row {
		t.Helper()
		dbMu.Lock()
		defer dbMu.Unlock()
		var n int64
		err := db.QueryRow(context.Background(), q, args...).Scan(&n)
		return rowOf{n, err}
	}
	var mu sync.Mutex
	proxies := map[*baton.Session]*proxy.Proxy{}
	droppers := map[*baton.Session]*dropper{}
	var paths atomic.Int64
	return batontest.Harness{
		Name:     "postgres",
		Parallel: true,
		Open: func(t testing.TB, ttl time.Duration) *baton.Session {
			if ttl == 0 {
				ttl = time.Second
			}
			p := proxy.Start(t, srv.Addr())
			d := &dropper{}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			dsn := fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable&schema=%s", p.Addr(), schema)
			s, err := Open(ctx, dsn, WithTTL(ttl), func(o *options) { o.dropper = d })
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close(context.Background()) })
			mu.Lock()
			proxies[s], droppers[s] = p, d
			mu.Unlock()
			return s
		},
		Path: func(testing.TB) string { return fmt.Sprintf("/baton/test-%d", paths.Add(1)) },
		Expire: func(t testing.TB, s *baton.Session) {
			id, err := strconv.ParseInt(s.ID(), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			var n int64
			if err := sql(t, "WITH d AS (DELETE FROM "+schema+".sessions WHERE id = $1 RETURNING 1) SELECT count(*) FROM d", id).Scan(&n); err != nil {
				t.Fatal(err)
			}
		},
		Partition: func(t testing.TB, s *baton.Session) func() {
			mu.Lock()
			p := proxies[s]
			mu.Unlock()
			if p == nil {
				t.Fatal("session not opened by the harness")
			}
			p.Blackhole()
			return p.Heal
		},
		DropCreateReply: func(t testing.TB, s *baton.Session) {
			mu.Lock()
			d := droppers[s]
			mu.Unlock()
			if d == nil {
				t.Fatal("session not opened by the harness")
			}
			d.n.Add(1)
		},
		PendingWatches: func(t testing.TB) int {
			var n int64
			if err := sql(t, "SELECT count(*) FROM "+schema+".watches").Scan(&n); err != nil {
				t.Fatal(err)
			}
			return int(n)
		},
	}
}

// rowOf is a scanned count as a pgx.Row.
type rowOf struct {
	n   int64
	err error
}

func (r rowOf) Scan(dst ...any) error {
	if r.err != nil {
		return r.err
	}
	*dst[0].(*int64) = r.n
	return nil
}

// The suites run beside each other on the shared server, each in a schema
// of its own: the herd tests count the watches of their schema alone.
func TestConformance(t *testing.T) {
	t.Parallel()
	batontest.Run(t, harness(t, pgtest.Shared(t)))
}

func TestConn(t *testing.T) {
	t.Parallel()
	batontest.RunConn(t, harness(t, pgtest.Shared(t)))
}

func TestLocker(t *testing.T) {
	t.Parallel()
	h := harness(t, pgtest.Shared(t))
	batontest.RunLocker(t, batontest.MutexLockers(h, false))
	t.Run("Reentrant", func(t *testing.T) { batontest.RunLocker(t, batontest.MutexLockers(h, true, baton.Reentrant())) })
}
