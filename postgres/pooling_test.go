package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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
