package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/pgtest"
)

// A create (or CreateAndList) given up on while the server is still
// working on it (its ctx ends while it waits for the directory's key) is
// undone: once the server applies it, the node is deleted, and nothing is
// left behind, as a cancelled wait promises.
func TestCreateGivenUpLeavesNothing(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	schema := newSchema()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := Open(ctx, fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable&schema=%s", srv.Addr(), schema))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	c := s.Conn()
	creates := map[string]func(ctx context.Context, dir string) error{
		"Create": func(ctx context.Context, dir string) error {
			_, err := c.Create(ctx, dir, backend.KindLock, nil, backend.Ephemeral|backend.Sequential)
			return err
		},
		"CreateAndList": func(ctx context.Context, dir string) error {
			_, _, err := c.(backend.CreateLister).CreateAndList(ctx, dir, backend.KindLock, nil, backend.Ephemeral|backend.Sequential)
			return err
		},
	}
	db := admin(t, srv)
	for _, name := range []string{"Create", "CreateAndList"} {
		dir := "/given-up-" + name
		// Hold the key that creates in dir take (shared; the schema's
		// lockkey2) exclusively, so the create waits there.
		key := schema + ".creates " + dir
		if _, err := db.Exec(ctx, "SELECT pg_advisory_lock(hashtextextended($1, 0))", key); err != nil {
			t.Fatal(err)
		}
		cctx, ccancel := context.WithTimeout(ctx, 300*time.Millisecond)
		err = creates[name](cctx, dir)
		ccancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s: %v, want DeadlineExceeded", name, err)
		}
		if _, err := db.Exec(ctx, "SELECT pg_advisory_unlock(hashtextextended($1, 0))", key); err != nil {
			t.Fatal(err)
		}
		// The create's backend, which waited for the lock, goes on now.
		await.Until(t, 10*time.Second, "no create waiting for the lock", func() bool {
			var waiting int64
			err := db.QueryRow(ctx, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted").Scan(&waiting)
			return err == nil && waiting == 0
		})
		// Its statement ends: whatever it wrote is committed (and
		// forgotten) or rolled back by then.
		await.Until(t, 10*time.Second, "the given-up create's statement to end", func() bool {
			var running int64
			err := db.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE state <> 'idle' AND pid <> pg_backend_pid() AND query LIKE '%' || $1 || '.create%'", schema).Scan(&running)
			return err == nil && running == 0
		})
		// Nothing can arrive later: the node a late create made is gone.
		await.Until(t, 10*time.Second, name+": no node left", func() bool {
			kids, err := c.Children(ctx, dir)
			return err == nil && len(kids) == 0
		})
	}
}
