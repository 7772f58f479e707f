package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/pgtest"
)

// The session check passes on a direct connection and through PgBouncer in
// session mode, and refuses PgBouncer in transaction and statement modes,
// where a LISTEN does not outlive its transaction.
func TestCheckSession(t *testing.T) {
	srv := pgtest.Shared(t)
	for _, tc := range []struct {
		via  string
		url  string
		want error
		runs int
	}{
		{"direct", srv.URL(""), nil, 3},
		{"pgbouncer session", srv.StartBouncer(t, "session").URL(""), nil, 3},
		{"pgbouncer transaction", srv.StartBouncer(t, "transaction").URL(""), ErrTransactionPooling, 3},
		{"pgbouncer statement", srv.StartBouncer(t, "statement").URL(""), ErrTransactionPooling, 3},
		// Server connections in turn: the notification that never comes
		// is what tells (after poolingWait).
		{"pgbouncer transaction round robin", srv.StartBouncer(t, "transaction", "server_round_robin = 1").URL(""), ErrTransactionPooling, 1},
	} {
		t.Run(tc.via, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			connect := func() *pgx.Conn {
				c, err := pgx.Connect(ctx, tc.url)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = c.Close(context.Background()) })
				return c
			}
			for i := range tc.runs { // the same answer each time, whichever server connections the pool picks
				listen, other := connect(), connect()
				if err := checkSession(ctx, listen, other); !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
					t.Fatalf("check %d via %s: %v, want %v", i, tc.via, err, tc.want)
				}
			}
		})
	}
}

// Open refuses PgBouncer in transaction mode with ErrTransactionPooling
// and works through PgBouncer in session mode: a lock is taken, waited
// for and handed over when its holder's session closes.
func TestOpenThroughPgBouncer(t *testing.T) {
	srv := pgtest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	schema := "s" + newSchema()
	tx := srv.StartBouncer(t, "transaction").URL("")
	s, err := Open(ctx, tx, WithSchema(schema), WithTTL(2*time.Second))
	if !errors.Is(err, ErrTransactionPooling) {
		if s != nil {
			_ = s.Close(ctx)
		}
		t.Fatalf("Open through PgBouncer in transaction mode: %v, want ErrTransactionPooling", err)
	}
	if !strings.Contains(err.Error(), "session mode") {
		t.Errorf("the error does not say what to do: %v", err)
	}
	sess := srv.StartBouncer(t, "session").URL("")
	open := func() *baton.Session {
		s, err := Open(ctx, sess, WithSchema(schema), WithTTL(2*time.Second))
		if err != nil {
			t.Fatalf("Open through PgBouncer in session mode: %v", err)
		}
		t.Cleanup(func() { _ = s.Close(context.Background()) })
		return s
	}
	a, b := open(), open()
	la, err := baton.NewMutex(a, "x").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		lb, err := baton.NewMutex(b, "x").Lock(ctx)
		if err == nil && lb.Token() <= la.Token() {
			err = fmt.Errorf("token %d after %d", lb.Token(), la.Token())
		}
		got <- err
	}()
	await.Children(t, ctx, a.Conn(), "x", 10*time.Second, "the waiter in line", await.AtLeast(2))
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the waiter through PgBouncer: %v", err)
	}
}
