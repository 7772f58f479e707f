package store

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/redis"
)

// silentServer accepts connections and never answers: a hung store.
func silentServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			_ = c.Close()
		}
	})
	return l.Addr().String()
}

// Every backend honours the dial timeout on a store that never answers,
// and Open's error keeps the backend's: a deadline or a network timeout.
func TestOpenHungStore(t *testing.T) {
	hung := silentServer(t)
	hung2, hung3 := silentServer(t), silentServer(t) // Parse refuses a host listed twice
	const dial = 500 * time.Millisecond
	for _, raw := range []string{"etcd://" + hung, "zk://" + hung, "redis://:hunter2@" + hung, "redlock://" + hung + "," + hung2 + "," + hung3} {
		t.Run(strings.SplitN(raw, ":", 2)[0], func(t *testing.T) {
			u, err := Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			began := time.Now()
			s, err := Open(context.Background(), u, Options{DialTimeout: dial})
			took := time.Since(began)
			if err == nil {
				_ = s.Close(context.Background())
				t.Fatal("opened a store that never answers")
			}
			var ne net.Error
			timedOut := errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
			if !errors.Is(err, ErrUnreachable) || !timedOut || !strings.Contains(err.Error(), "within "+dial.String()) {
				t.Errorf("error %q: want ErrUnreachable wrapping the backend's timeout", err)
			}
			if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q: want one line without the password", err)
			}
			// The backend gives up at the deadline; the slack is for a
			// loaded machine, far below a second attempt.
			if took < dial || took > dial+3*time.Second {
				t.Errorf("Open took %v with a %v dial timeout", took, dial)
			}
		})
	}
}

// Open waits for the backend: when the backend's Open returns after the
// dial timeout with a session, that session is the caller's, never left
// open behind an error (Open used to give up 100 ms after the deadline
// and drop whatever came later).
func TestOpenWaitsForBackend(t *testing.T) {
	var closed, returned atomic.Bool
	late := &Store{closer: func() error { closed.Store(true); return nil }}
	openBackend = func(ctx context.Context, u URL, o Options) (*Store, error) {
		defer returned.Store(true)
		<-ctx.Done()
		time.Sleep(300 * time.Millisecond) // a backend slow to notice
		return late, nil
	}
	t.Cleanup(func() { openBackend = open })
	u, err := Parse("etcd://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), u, Options{DialTimeout: 100 * time.Millisecond})
	if !returned.Load() {
		t.Fatal("Open returned while the backend's Open was still running")
	}
	if err != nil || s != late {
		t.Fatalf("Open = %v, %v; want the backend's store", s, err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !closed.Load() {
		t.Fatal("the store's Close did not close the backend's client")
	}
}

// Errors keep their types: a refused password is ErrAuth and still the
// Redis authentication error underneath, without the password.
func TestOpenErrorsKeepTypes(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{Password: "right-pw"})
	u, err := Parse("redis://:wrong-pw@" + srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), u, Options{DialTimeout: 5 * time.Second})
	if err == nil {
		_ = s.Close(context.Background())
		t.Fatal("opened with a wrong password")
	}
	if !errors.Is(err, ErrAuth) || !redis.IsAuthError(err) {
		t.Errorf("error %q: want ErrAuth and a Redis authentication error", err)
	}
	if strings.Contains(err.Error(), "wrong-pw") {
		t.Errorf("error %q shows the password", err)
	}
	if _, err := Open(context.Background(), URL{Scheme: "consul", Hosts: []string{"h:1"}}, Options{}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("unknown kind: %v, want ErrUnavailable", err)
	}
}
