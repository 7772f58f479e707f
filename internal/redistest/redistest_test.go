package redistest_test

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/redistest"
)

// info sends INFO server over a raw connection and returns run_id.
func runID(t *testing.T, addr string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("INFO server\r\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	for range 200 {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := strings.CutPrefix(line, "run_id:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("no run_id in INFO server")
	return ""
}

func TestStartKillRestart(t *testing.T) {
	srvs := redistest.StartN(t, 2, redistest.Config{})
	if srvs[0].Addr() == srvs[1].Addr() {
		t.Fatal("two servers on one address")
	}
	s := srvs[0]
	before := runID(t, s.Addr())
	s.Kill()
	if s.Running() {
		t.Fatal("running after Kill")
	}
	if _, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
		t.Fatal("still accepting after Kill")
	}
	s.Restart()
	if after := runID(t, s.Addr()); after == before || after == "" {
		t.Fatalf("run_id %q after restart, was %q", after, before)
	}
}
