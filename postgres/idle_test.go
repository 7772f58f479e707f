package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/pgtest"
)

// A session that waits holds its listening connection alone once its
// query connections have been idle for poolIdle: a crowd of waiters takes
// one of the server's max_connections each.
func TestWaitingSessionKeepsOneConnection(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	db := srv.Database(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	url := fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable&schema=%s", srv.Addr(), db, newSchema())
	holder, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	waiter, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close(ctx)
	h, _, err := holder.Conn().(backend.CreateLister).CreateAndList(ctx, "/idle", backend.KindLock, nil, backend.Ephemeral|backend.Sequential)
	if err != nil {
		t.Fatal(err)
	}
	w, kids, err := waiter.Conn().(backend.CreateLister).CreateAndList(ctx, "/idle", backend.KindLock, nil, backend.Ephemeral|backend.Sequential)
	if err != nil || len(kids) != 2 || kids[0].Path != h.Path {
		t.Fatalf("the waiter's CreateAndList: %+v, %+v, %v", w, kids, err)
	}
	done := make(chan error, 1)
	go func() { done <- waiter.Conn().WaitGone(ctx, h) }()
	admin := admin(t, srv)
	conns := func() int {
		var n int
		if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = $1", db).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Two sessions, one waiting: their listening connections alone.
	await.Until(t, 4*poolIdle, "the sessions' idle query connections closed", func() bool { return conns() == 2 })
	if err := holder.Conn().Delete(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the wait after the holder's delete: %v", err)
	}
}
