package reliability

import (
	"testing"
	"time"

	"github.com/batonhq/baton/internal/pgtest"
)

// pgTTL is the session TTL of the PostgreSQL scenarios, etcd's.
const pgTTL = 2 * time.Second

// pgTarget starts a PostgreSQL server of t's own.
func pgTarget(t *testing.T) target {
	srv := pgtest.Start(t)
	return target{kind: "postgres", addr: srv.Addr(), ttl: pgTTL}
}

// pgURL is the URL of the test server's postgres database at addr (the
// server's own address or a proxy's).
func pgURL(addr string) string {
	return "postgres://postgres@" + addr + "/postgres?sslmode=disable"
}
