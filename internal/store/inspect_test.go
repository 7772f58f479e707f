package store

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/internal/zktest"
	"github.com/batonhq/baton/memory"
)

// TestInspectorSeesHoldAndRelease: the inspector Inspect hands out for
// each kind of store (over a Session on memory and ZooKeeper, on the
// servers on Redis, Redlock and a Redis Cluster) lists a held lock under its prefix (but
// on the in-process store, which the ui does not read), reads
// its holder, and a Wait on it returns once it is released; the Redis
// kinds refuse the ui's admin Conn, the others give one. Nothing of the
// caller's chooses by kind.
func TestInspectorSeesHoldAndRelease(t *testing.T) {
	ms := memory.New()
	redlock := redistest.StartN(t, 3, redistest.Config{})
	for _, raw := range []string{
		"memory://",
		"zk://" + zktest.Start(t).Addr(),
		"redis://" + redistest.Start(t, redistest.Config{}).Addr(),
		"redlock://" + redlock[0].Addr() + "," + redlock[1].Addr() + "," + redlock[2].Addr(),
		redistest.StartCluster(t, 3, 1).URL(),
	} {
		t.Run(strings.SplitN(raw, ":", 2)[0], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			o := Options{DialTimeout: 10 * time.Second, TTL: time.Second}
			u, open := URL{Scheme: Memory}, func(ctx context.Context) (*Store, error) {
				s, err := ms.Open(ctx)
				return OnSession(URL{Scheme: Memory}, s), err
			}
			if raw != "memory://" {
				var err error
				if u, err = Parse(raw); err != nil {
					t.Fatal(err)
				}
				open = func(ctx context.Context) (*Store, error) { return Open(ctx, u, o) }
			}
			s, err := open(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = s.Close(context.Background()) }()
			name := "/inspect/held"
			lk := s.Mutex(name)
			if _, err := lk.Lock(ctx); err != nil {
				t.Fatal(err)
			}

			in := Inspect(u, o, open)
			defer in.Close(context.Background())
			if _, err := in.Connect(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := in.Conn(ctx); errors.Is(err, ErrReadOnly) != (u.Admin() != nil) {
				t.Fatalf("admin Conn: %v; the URL's Admin: %v", err, u.Admin())
			}
			// The ui lists names; the bench's in-process store keeps keys
			// without directories, as etcd does, and has no ui.
			if prefix := "/inspect"; !u.InProcess() {
				l, err := in.List(ctx, prefix, 100)
				if err != nil || !slices.Contains(l.Names, name) {
					t.Fatalf("List(%q): %v, %v; want %s in it", prefix, l, err, name)
				}
			}
			nr := in.Name(name)
			rep, err := nr.Read(ctx)
			if err != nil || rep.Holders != 1 {
				t.Fatalf("Read of a held lock: %d holders, %v; want 1", rep.Holders, err)
			}
			waited := make(chan error, 1)
			go func() { waited <- nr.Wait(ctx) }()
			if err := lk.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-waited:
				if err != nil {
					t.Fatalf("Wait: %v", err)
				}
			case <-ctx.Done():
				t.Fatal("Wait did not return after the release")
			}
			if rep, err := nr.Read(ctx); err != nil || rep.Holders != 0 {
				t.Fatalf("Read after the release: %d holders, %v; want 0", rep.Holders, err)
			}
		})
	}
}
