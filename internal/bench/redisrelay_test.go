package bench

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/redistest"
)

// redisAddrs starts n servers and returns their addresses.
func redisAddrs(t *testing.T, n int) []string {
	var addrs []string
	for _, s := range redistest.StartN(t, n, redistest.Config{}) {
		addrs = append(addrs, s.Addr())
	}
	return addrs
}

// handsOff runs 4 contenders on f for a moment and checks that they took
// turns, one holder at a time, with at most maxReq server requests per
// acquisition. A release that finds nobody in line frees the lock, and
// its releaser may take it back: rare, since the others wait, but on a
// starved CPU a waiter may not be back in line yet, so up to 20% passes
// (a floor measures; baton's own order is held by TestMutexFIFO and
// TestRedlockHandOff).
func handsOff(t *testing.T, what string, f Factory, addrs []string, maxReq float64) {
	t.Helper()
	tg := Target{Impl: what, Store: "redis", Factory: f, Probe: &RedisProbe{Addrs: addrs}}
	r, err := Run(context.Background(), tg, Config{Workload: "contended", Clients: 4, Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatalf("%s on %d servers: %v", what, len(addrs), err)
	}
	if r.Acquisitions == 0 || r.Errors != 0 || r.Overlaps != 0 {
		t.Fatalf("%s on %d servers: %d acquisitions, %d errors, %d overlaps (%s)", what, len(addrs), r.Acquisitions, r.Errors, r.Overlaps, r.Note)
	}
	if r.ReacquirePct == nil || *r.ReacquirePct > 20 {
		t.Errorf("%s on %d servers: re-acquisition %s, want a hand-off to another client almost always", what, len(addrs), num(r.ReacquirePct, 2))
	}
	if r.ServerRequestsPerAcq == nil || *r.ServerRequestsPerAcq > maxReq {
		t.Errorf("%s on %d servers: %s server requests per acquisition, want at most %v", what, len(addrs), num(r.ServerRequestsPerAcq, 2), maxReq)
	}
}

// TestRedisRelay: the relay floor hands the lock on in turn, one holder
// at a time, on one server and on a majority of three, with one PUBLISH
// per server per acquisition.
func TestRedisRelay(t *testing.T) {
	for _, n := range []int{1, 3} {
		addrs := redisAddrs(t, n)
		handsOff(t, "relay floor", &RedisRelay{Addrs: addrs}, addrs, float64(n)+0.1)
	}
}

// TestRedisLineFloor: the line floor serves its waiters in turn, one
// holder at a time, with at most 9 commands per acquisition.
func TestRedisLineFloor(t *testing.T) {
	addrs := redisAddrs(t, 1)
	handsOff(t, "line floor", RedisLineFloor{Addr: addrs[0]}, addrs, 9.1)
}

// TestRedisDeadlineFloor: the line floor with deadlines serves its
// waiters in turn, one holder at a time, with at most 11 commands per
// acquisition.
func TestRedisDeadlineFloor(t *testing.T) {
	addrs := redisAddrs(t, 1)
	handsOff(t, "deadline floor", RedisLineFloor{Addr: addrs[0], Deadlines: true}, addrs, 11.1)
}

// TestRedisBlockingFloor: the blocking floor serves its waiters in turn,
// one holder at a time, with at most 8 commands per acquisition (and the
// holder's mark, once per holder).
func TestRedisBlockingFloor(t *testing.T) {
	addrs := redisAddrs(t, 1)
	handsOff(t, "blocking floor", RedisBlockingFloor{Addr: addrs[0]}, addrs, 8.2)
}

// TestRedlockLineFloor: the Redlock line floor serves its waiters in
// turn on a majority of three, one holder at a time. Per master: the join
// script (SET NX, ZADD) and the release script (ZREM, GET, ZPOPMIN, SET,
// PUBLISH), scripts counted.
func TestRedlockLineFloor(t *testing.T) {
	addrs := redisAddrs(t, 3)
	handsOff(t, "Redlock line floor", RedlockLineFloor{Addrs: addrs}, addrs, 3*9+0.5)
}
