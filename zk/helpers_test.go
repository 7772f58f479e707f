package zk

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/proxy"
	"github.com/batonhq/baton/internal/zktest"
)

// TestMain runs the tests on a shared server, then fails the package if
// a goroutine outlives them: every session's goroutines (ours and the
// client library's) end with Close.
func TestMain(m *testing.M) {
	code := zktest.Main(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines outlive the tests:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// testTTL is the default session timeout in tests: expiry takes about two
// seconds on the test server's 100 ms tick. Shorter sessions get lost
// locally, correctly but spuriously, when the machine is overloaded.
const testTTL = 2 * time.Second

var pathSeq atomic.Int64

// testPath returns a fresh path for one test.
func testPath(t testing.TB) string {
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	return fmt.Sprintf("/baton-test/%s-%d", name, pathSeq.Add(1))
}

// openAt opens a session on addr, closed on cleanup.
func openAt(t testing.TB, addr string, ttl time.Duration, opts ...Option) *baton.Session {
	t.Helper()
	if ttl == 0 {
		ttl = testTTL
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, []string{addr}, append([]Option{WithTTL(ttl)}, opts...)...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	return s
}

// openT opens a session on the shared test server.
func openT(t testing.TB, ttl time.Duration, opts ...Option) *baton.Session {
	t.Helper()
	return openAt(t, zktest.Shared(t).Addr(), ttl, opts...)
}

// openProxied opens a session on the shared test server through a proxy
// of its own.
func openProxied(t testing.TB, ttl time.Duration) (*baton.Session, *proxy.Proxy) {
	t.Helper()
	p := proxy.Start(t, zktest.Shared(t).Addr())
	return openAt(t, p.Addr(), ttl), p
}

// expire makes the server expire s's session, the classic trick: a second
// connection attaches to the session with its id and password and closes
// it. The session's own client, which would win the session back at once,
// is kept off (its proxy cut) meanwhile.
func expire(t testing.TB, addr string, p *proxy.Proxy, s *baton.Session) {
	t.Helper()
	id, pw := credentials(s)
	p.Cut()
	defer p.Heal()
	if err := closeSession(addr, id, pw); err != nil {
		t.Fatalf("expire session %#x: %v", id, err)
	}
}

func closeSession(addr string, id int64, passwd []byte) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	// ConnectRequest: protocolVersion, lastZxidSeen, timeOut, sessionId, passwd.
	req := binary.BigEndian.AppendUint32(nil, 0)
	req = binary.BigEndian.AppendUint64(req, 0)
	req = binary.BigEndian.AppendUint32(req, 30000)
	req = binary.BigEndian.AppendUint64(req, uint64(id))
	req = binary.BigEndian.AppendUint32(req, uint32(len(passwd)))
	req = append(req, passwd...)
	if err := writeFrame(c, req); err != nil {
		return err
	}
	resp, err := readFrame(c)
	if err != nil {
		return err
	}
	if len(resp) < 16 || int64(binary.BigEndian.Uint64(resp[8:])) != id {
		return fmt.Errorf("server did not attach to the session (already gone?)")
	}
	// closeSession: header xid=1, type=-11.
	if err := writeFrame(c, binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 1), uint32(0xfffffff5))); err != nil {
		return err
	}
	_, err = readFrame(c)
	return err
}

func writeFrame(w io.Writer, body []byte) error {
	_, err := w.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...))
	return err
}

func readFrame(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(hdr[:]))
	_, err := io.ReadFull(r, b)
	return b, err
}

// waitDone waits (bounded) for s to end and returns its error.
func waitDone(t testing.TB, s *baton.Session, limit time.Duration) error {
	t.Helper()
	select {
	case <-s.Done():
		return s.Err()
	case <-time.After(limit):
		t.Fatalf("session %s still live after %v", s.ID(), limit)
		return nil
	}
}
