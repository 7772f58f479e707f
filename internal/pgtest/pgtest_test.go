package pgtest_test

import (
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/pgtest"
)

// A cluster starts, takes SQL on its own databases, and comes back from
// an immediate restart with its data.
func TestStartRestart(t *testing.T) {
	s := pgtest.Start(t)
	db := s.Database(t)
	s.SQL(t, db, "CREATE TABLE x (v int); INSERT INTO x VALUES (7)")
	s.Restart(t)
	if got := s.SQL(t, db, "SELECT v FROM x"); got != "7" {
		t.Fatalf("after restart: %q, want 7", got)
	}
	if got := s.SQL(t, "", "SHOW fsync"); got != "off" {
		t.Fatalf("fsync %q, want off", got)
	}
	if !strings.HasPrefix(s.URL(db), "postgres://postgres@127.0.0.1:") {
		t.Fatalf("URL %q", s.URL(db))
	}
}
