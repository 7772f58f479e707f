package redis

import (
	"context"
	"fmt"
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
// here: the restart guard costs nothing per request.
//
// The restart guard: a server whose run_id changed, or that has been up
// for less than a ttl, may have lost keys a holder still relies on (it
// restarted without persistence), so no lock of that ttl is granted on it
// until a ttl has passed: a Mutex keeps such a grant without holding
// until then, a Redlock does not count the master toward a quorum.
type server struct {
	hooked  bool // onConnect is installed on every connection
	cluster bool // Redis Cluster: many processes, no one run_id; no guard

	mu      sync.Mutex
	runID   string
	blind   bool      // INFO answered without a run_id (and none is known)
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
	s.mu.Lock()
	defer s.mu.Unlock()
	if runID == "" {
		s.blind = s.runID == ""
		return
	}
	now := time.Now()
	// uptime_in_seconds is the difference of two wall-clock times in whole
	// seconds (now and the start, each truncated): it may exceed the time
	// the server has been up by almost a second (1 when it has been up for
	// 1 ms), never by a second. So the server has been up for more than
	// uptime - 1s: every reading puts the start at or after the true one;
	// keep the earliest.
	started := now.Add(-max(uptime-time.Second, 0))
	if s.runID == runID {
		if started.Before(s.started) {
			s.started = started
		}
		return
	}
	if s.runID != "" {
		s.changed = now
	}
	s.runID, s.blind = runID, false
	s.started = started
}

// known reports whether a run_id has been read.
func (s *server) known() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runID != ""
}

// trusted reports whether the restart guard lets locks of ttl be granted
// on the server: its run_id is known, did not change less than a ttl ago,
// and the server has been up for a ttl.
func (s *server) trusted(ttl time.Duration) bool { return s.guard(ttl).left == 0 }

// guardState is what the restart guard says of a server for locks of one
// ttl.
type guardState struct {
	left    time.Duration // how long locks still wait; 0: trusted
	unknown bool          // no run_id read yet (left is the ttl)
	blind   bool          // INFO gave no run_id: never trusted
	changed bool          // its run_id changed (else: it has been up less than a ttl)
	ago     time.Duration // since it (re)started, by its uptime
}

// guard says whether, and for how long, the restart guard keeps locks of
// ttl off the server.
func (s *server) guard(ttl time.Duration) guardState {
	if s.cluster {
		return guardState{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runID == "" {
		return guardState{left: ttl, unknown: !s.blind, blind: s.blind}
	}
	now := time.Now()
	g := guardState{ago: now.Sub(s.started)}
	if left := ttl - g.ago; left > 0 {
		g.left = left
	}
	if !s.changed.IsZero() {
		if left := ttl - now.Sub(s.changed); left > 0 && left >= g.left {
			g.left, g.changed = left, true
		}
	}
	return g
}

// guardNote says why the restart guard keeps locks of ttl off the server
// named who, or "" when it does not: "redis://h:p restarted 0.2s ago
// (run_id changed); locks on it wait until a TTL (6s) has passed: 5.8s
// left".
func (s *server) guardNote(who string, ttl time.Duration) string {
	g := s.guard(ttl)
	switch {
	case g.left == 0 || g.unknown:
		return ""
	case g.blind:
		return who + " gives no run_id in INFO server, so a restart that lost keys cannot be told: no lock is granted on it"
	}
	ago := g.ago.Round(100 * time.Millisecond)
	why := fmt.Sprintf("has been up for %v, less than a TTL: it may have restarted and lost keys", ago)
	if g.changed {
		why = fmt.Sprintf("restarted %v ago (run_id changed)", ago)
	}
	return fmt.Sprintf("%s %s; locks on it wait until a TTL (%v) has passed: %v left", who, why, ttl, roundGuard(g.left))
}

// roundGuard rounds the time left for the guard's messages: to 100 ms,
// and never to 0 when positive.
func roundGuard(d time.Duration) time.Duration {
	if r := d.Round(100 * time.Millisecond); r > 0 || d <= 0 {
		return r
	}
	return 100 * time.Millisecond
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
