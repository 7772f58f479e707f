package redis

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// server is what a Client knows of the Redis process it talks to: its
// run_id and when it started, read with INFO server on every new
// connection. A process that restarted is only reachable through new
// connections, so each of its answers comes after its run_id was read
// here: Redlock's restart guard costs nothing per request.
type server struct {
	hooked bool // onConnect is installed on every connection

	mu      sync.Mutex
	runID   string
	started time.Time // now - uptime, when last read (monotonic)
	changed time.Time // when run_id was seen to change (monotonic)
}

// onConnect returns an OnConnect hook that records the server's run_id
// before the connection serves anything, after prev.
func (s *server) onConnect(prev func(context.Context, *goredis.Conn) error) func(context.Context, *goredis.Conn) error {
	return func(ctx context.Context, cn *goredis.Conn) error {
		if prev != nil {
			if err := prev(ctx, cn); err != nil {
				return err
			}
		}
		info, err := cn.Info(ctx, "server").Result()
		if err != nil {
			return MapError(err)
		}
		s.saw(parseInfo(info))
		return nil
	}
}

// saw records a run_id and uptime read just now.
func (s *server) saw(runID string, uptime time.Duration) {
	if runID == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	started := now.Add(-uptime)
	if s.runID == runID {
		// uptime is in whole seconds: every reading puts the start at or
		// after the true one; keep the earliest.
		if started.Before(s.started) {
			s.started = started
		}
		return
	}
	if s.runID != "" {
		s.changed = now
	}
	s.runID = runID
	s.started = started
}

// known reports whether a run_id has been read.
func (s *server) known() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runID != ""
}

// trusted reports whether the server's answers may count toward a quorum:
// not if its run_id changed less than a ttl ago, nor if it has been up
// for less than a ttl (it may have lost keys a holder relies on).
func (s *server) trusted(ttl time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.runID == "" {
		return false
	}
	if !s.changed.IsZero() && now.Sub(s.changed) < ttl {
		return false
	}
	return now.Sub(s.started) >= ttl
}

// parseInfo reads run_id and uptime from INFO server.
func parseInfo(s string) (runID string, uptime time.Duration) {
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "run_id:"); ok {
			runID = v
		} else if v, ok := strings.CutPrefix(line, "uptime_in_seconds:"); ok {
			sec, _ := strconv.ParseInt(v, 10, 64)
			uptime = time.Duration(sec) * time.Second
		}
	}
	return runID, uptime
}
