package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// RedlockLineFloor is the contended floor of a fair Redlock whose lines
// are on the masters, as they must be for clients in different
// processes: the least such a lock runs per hand-off. A Lock is one
// script on every master in parallel that takes the key (SET NX PX) or
// joins a line ordered by the waiter's ticket (ZADD), the same ticket on
// every master; a release is one script on every master that deletes the
// key if it holds our value (GET, DEL) or hands it to the first in line
// (ZPOPMIN, SET, PUBLISH to that waiter's channel). A waiter holds once a
// majority took or handed it the key. That is 10 requests and 5 hand-off
// messages per contended acquisition on five masters, as baton's Redlock
// makes, with none of what keeps the lines alive through failures (entry
// deadlines and refreshes, the line's expiry, the server clock, the
// restart guard, validity): a measuring stick for the contended
// workload, not a lock. Votes split only when the keys were free and
// different waiters took them (at the start); a waiter that holds some
// masters but not a majority for a short, random while gives back what it
// has and asks again, keeping its ticket and so its place.
type RedlockLineFloor struct {
	Addrs    []string
	Password string
}

const (
	// redlockLineJoin: take the key, or join the line by ticket.
	// KEYS: lock, line. ARGV: value, ttl ms, ticket. Returns 1 if taken.
	redlockLineJoin = `if redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then return 1 end
redis.call("zadd", KEYS[2], ARGV[3], ARGV[1]) return 0`
	// redlockLineRelease: release the key if ours, handing it to the first
	// in line. Values are "<channel>|<n>". KEYS: lock, line. ARGV: value,
	// ttl ms.
	redlockLineRelease = `redis.call("zrem", KEYS[2], ARGV[1])
if redis.call("get", KEYS[1]) ~= ARGV[1] then return 0 end
local e = redis.call("zpopmin", KEYS[2])
if #e == 0 then redis.call("del", KEYS[1]) return 1 end
redis.call("set", KEYS[1], e[1], "PX", ARGV[2])
redis.call("publish", string.match(e[1], "^(.*)|"), e[1])
return 1`
)

var (
	redlockLineJoinScript    = goredis.NewScript(redlockLineJoin)
	redlockLineReleaseScript = goredis.NewScript(redlockLineRelease)
)

// redlockLineSplit is the least a waiter holding some masters but not a
// majority waits before giving them back; it waits up to twice that, at
// random, so that split waiters do not give up in step and split again.
// Hand-offs from one release reach all masters within a round trip, so a
// partial hold that lasts this long is a split.
const redlockLineSplit = 20 * time.Millisecond

// Open connects one client per master and subscribes the client's
// channel on each.
func (f RedlockLineFloor) Open(ctx context.Context) (Client, error) {
	c := &redlockLineClient{msgs: make(chan redlockLineMsg, 64)}
	c.ch = fmt.Sprintf("redlockfloor:%p", c)
	c.vals.prefix = c.ch
	for i, a := range f.Addrs {
		rc := goredis.NewClient(&goredis.Options{Addr: a, Password: f.Password, ContextTimeoutEnabled: true})
		c.rcs = append(c.rcs, rc)
		ps := rc.Subscribe(ctx, c.ch)
		c.pss = append(c.pss, ps)
		if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation
			_ = c.Close(ctx)
			return nil, err
		}
		ch := ps.Channel()
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			for m := range ch {
				select {
				case c.msgs <- redlockLineMsg{master: i, payload: m.Payload}:
				default:
				}
			}
		}()
	}
	return c, nil
}

type redlockLineMsg struct {
	master  int
	payload string
}

type redlockLineClient struct {
	rcs  []*goredis.Client
	pss  []*goredis.PubSub
	ch   string
	msgs chan redlockLineMsg
	wg   sync.WaitGroup
	vals values
}

// Locker returns a handle; a client's handles must not wait at once (they
// share its messages).
func (c *redlockLineClient) Locker(name string) Locker {
	return &redlockLineLocker{c: c, keys: []string{name, name + ":line"}}
}

func (c *redlockLineClient) Close(context.Context) error {
	closeRedis(c.pss, c.rcs, &c.wg)
	return nil
}

type redlockLineLocker struct {
	c     *redlockLineClient
	keys  []string
	value string
}

func (l *redlockLineLocker) Lock(ctx context.Context) error {
	ticket := strconv.FormatInt(time.Now().UnixMicro(), 10)
	for {
		l.value = l.c.vals.next()
		got := make([]bool, len(l.c.rcs))
		errs := l.each(func(i int, rc *goredis.Client) error {
			n, err := redlockLineJoinScript.Run(ctx, rc, l.keys, l.value, floorTTL.Milliseconds(), ticket).Int64()
			got[i] = n == 1
			return err
		})
		if err := errors.Join(errs...); err != nil {
			return l.giveUp(ctx, err)
		}
		if l.wait(ctx, got) {
			return nil
		}
		if err := l.giveUp(ctx, nil); err != nil {
			return err
		}
	}
}

// wait waits until a majority of masters took or handed us the key; false
// after it held some but not a majority for a split timeout, after a
// second without a majority (a hand-off message lost), or when ctx ended.
func (l *redlockLineLocker) wait(ctx context.Context, got []bool) bool {
	need := len(got)/2 + 1
	var split <-chan time.Time
	stall := time.NewTimer(time.Second)
	defer stall.Stop()
	for {
		n := 0
		for _, g := range got {
			if g {
				n++
			}
		}
		if n >= need {
			return true
		}
		if n > 0 && split == nil {
			t := time.NewTimer(redlockLineSplit + rand.N(redlockLineSplit))
			defer t.Stop()
			split = t.C
		}
		select {
		case m := <-l.c.msgs:
			if m.payload == l.value {
				got[m.master] = true
			}
		case <-split:
			return false
		case <-stall.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// giveUp leaves the lines and passes on what we were handed; it returns
// ctx's error if it ended, else err.
func (l *redlockLineLocker) giveUp(ctx context.Context, err error) error {
	uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = l.Unlock(uctx)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

func (l *redlockLineLocker) Unlock(ctx context.Context) error {
	return errors.Join(l.each(func(_ int, rc *goredis.Client) error {
		return redlockLineReleaseScript.Run(ctx, rc, l.keys, l.value, floorTTL.Milliseconds()).Err()
	})...)
}

// each runs f on every master in parallel.
func (l *redlockLineLocker) each(f func(i int, rc *goredis.Client) error) []error {
	errs := make([]error, len(l.c.rcs))
	var wg sync.WaitGroup
	for i, rc := range l.c.rcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i, rc)
		}()
	}
	wg.Wait()
	return errs
}
