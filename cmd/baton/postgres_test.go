package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/postgres"
)

// TestDemoPostgres: the demo keeps every promise on PostgreSQL, with the
// 2s sessions it uses elsewhere.
func TestDemoPostgres(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	u := "postgresql://postgres@" + srv.Addr() + "/postgres?sslmode=disable&schema=demo"
	out, stderr, code := run(t, env(), "demo", "--store", u, "--workers", "3", "--rounds", "4")
	checkDemo(t, out, stderr, code, "2s")
}

// TestPostgresInit: `baton postgres init` makes the schema a user names,
// says so, and is idempotent; a lock then works in that schema; a store
// of another kind is a usage error.
func TestPostgresInit(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	u := "postgres://postgres@" + srv.Addr() + "/postgres?sslmode=disable&schema=initted"
	for range 2 {
		out, stderr, code := run(t, env(), "postgres", "init", "--store", u)
		if code != 0 || !strings.HasPrefix(out, "schema initted at version "+strconv.Itoa(postgres.SchemaVersion)+" on postgres://") {
			t.Fatalf("postgres init: exit %d, stdout %q, stderr %q", code, out, stderr)
		}
	}
	if got := srv.SQL(t, "", "SELECT max(version) FROM initted.migrations"); got != strconv.Itoa(postgres.SchemaVersion) {
		t.Fatalf("initted.migrations: %q", got)
	}
	out, stderr, code := run(t, env("BATON_STORE="+u), "lock", "--try", "init/x", "--", "sh", "-c", "echo $BATON_TOKEN")
	if code != 0 || strings.TrimSpace(out) == "" {
		t.Fatalf("lock on the initted schema: exit %d, %q, %q", code, out, stderr)
	}
	if got := srv.SQL(t, "", "SELECT count(*) FROM initted.sessions"); got != "0" {
		t.Fatalf("%s sessions left in initted after the lock", got)
	}
	_, stderr, code = run(t, env(), "postgres", "init", "--store", "etcd://127.0.0.1:1")
	if code != 2 || !strings.Contains(stderr, "postgres://") {
		t.Fatalf("postgres init on etcd://: exit %d, stderr %q; want 2 and a message", code, stderr)
	}
}

// TestPostgresUnixSocket: a store reached over the server's unix socket,
// spelled as libpq users spell it: the socket's directory percent-encoded
// as the host, or no host and host= in the query.
func TestPostgresUnixSocket(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	dir, port := url.PathEscape(srv.SocketDir()), strconv.Itoa(srv.Port()) // PathEscape: "/" is %2F
	for _, u := range []string{
		"postgres://postgres@" + dir + ":" + port + "/postgres?schema=sock",
		"postgresql:///postgres?host=" + url.QueryEscape(srv.SocketDir()) + "&port=" + port + "&user=postgres&schema=sock",
	} {
		out, stderr, code := run(t, env(), "lock", "--try", "--store", u, "sock/x", "--", "sh", "-c", "echo $BATON_TOKEN")
		if code != 0 || strings.TrimSpace(out) == "" {
			t.Fatalf("lock on %s: exit %d, %q, %q", u, code, out, stderr)
		}
	}
}

// TestUIPostgres: `baton ui` on postgres:// lists the names under its
// prefix (the directories of baton's rows, as etcd's keys) with their
// holders, and a new name appears without a reload of the page's state
// being asked for by hand.
func TestUIPostgres(t *testing.T) {
	t.Parallel()
	e := env("BATON_STORE=postgres://postgres@" + pgtest.Shared(t).Addr() + "/postgres?sslmode=disable")
	holder := startHeld(t, e, "lock", "uipg/a")
	base := startUI(t, e, "--prefix", "uipg/")
	state := func() string {
		resp, err := http.Get(base + "api/state")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const want = `"name":"uipg/a","recipes":["mutex"],"holders":1`
	await.Until(t, 10*time.Second, "uipg/a held on the page", func() bool {
		s := state()
		return strings.Contains(s, want) && strings.Contains(s, fmt.Sprintf(`"pid":%d`, pid(holder)))
	})
	other := startHeld(t, e, "lock", "uipg/b")
	await.Until(t, 10*time.Second, "uipg/b on the page", func() bool {
		return strings.Contains(state(), `"name":"uipg/b"`)
	})
	other.signal(2)
	holder.signal(2)
}
