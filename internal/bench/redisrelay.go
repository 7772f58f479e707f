package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// RedisRelay is the contended floor on Redis: the least one FIFO hand-off
// costs there, one PUBLISH by the releaser to the next holder's channel
// and its delivery. The line of waiters is kept in this process, so the
// relay runs no queuing command and no check; a waiter reads its own
// subscription on its own goroutine (no hop to another goroutine). A
// lock that serves waiters in order, with clients in other processes,
// cannot hand off faster on the same server. With several Addrs
// (Redlock) the releaser publishes on every server in parallel and a
// waiter holds once a majority has delivered, as a Redlock hand-off must
// be confirmed by a majority. It is a measuring stick for the contended
// workload, not a lock: its lockers must all live in one process.
type RedisRelay struct {
	Addrs    []string
	Password string

	relays lines[relayLine[*redisRelayLocker]]
}

// Open connects one client per server.
func (f *RedisRelay) Open(ctx context.Context) (Client, error) {
	rcs, err := dialRedis(ctx, f.Addrs, f.Password)
	if err != nil {
		return nil, err
	}
	return &redisRelayClient{f: f, rcs: rcs}, nil
}

type redisRelayClient struct {
	f   *RedisRelay
	rcs []*goredis.Client
	mu  sync.Mutex
	n   int
	pss []*goredis.PubSub
	wg  sync.WaitGroup // the forwarders of several servers' messages
}

func (c *redisRelayClient) Locker(name string) Locker {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return &redisRelayLocker{c: c, r: c.f.relays.get(name), key: name, ch: fmt.Sprintf("relay:%s:%p-%d", name, c, c.n)}
}

func (c *redisRelayClient) Close(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	closeRedis(c.pss, c.rcs, &c.wg)
	return nil
}

// redisRelayLocker is told on its own channel, on every server, that the
// lock is handed to it.
type redisRelayLocker struct {
	c   *redisRelayClient
	r   *relayLine[*redisRelayLocker]
	key string
	ch  string

	msgs chan string // one server: nil, the waiter reads ps itself
	ps   *goredis.PubSub
}

// arm subscribes once, on every server, and waits for the confirmations.
func (l *redisRelayLocker) arm(ctx context.Context) error {
	if l.ps != nil || l.msgs != nil {
		return nil
	}
	var pss []*goredis.PubSub
	for _, rc := range l.c.rcs {
		ps := rc.Subscribe(ctx, l.ch)
		if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation
			_ = ps.Close()
			for _, p := range pss {
				_ = p.Close()
			}
			return fmt.Errorf("relay: subscribe: %w", err)
		}
		pss = append(pss, ps)
	}
	l.c.mu.Lock()
	l.c.pss = append(l.c.pss, pss...)
	l.c.mu.Unlock()
	if len(pss) == 1 {
		l.ps = pss[0]
		return nil
	}
	// Several servers: forward their messages to one channel; a message
	// that finds it full is dropped (the waiter reads all it needs).
	l.msgs = make(chan string, 64)
	for _, ps := range pss {
		ch := ps.Channel()
		l.c.wg.Add(1)
		go func() {
			defer l.c.wg.Done()
			for m := range ch {
				select {
				case l.msgs <- m.Payload:
				default:
				}
			}
		}()
	}
	return nil
}

// Lock takes the lock at once if nobody holds it (one SET, as an
// uncontended lock must make), else joins the line and waits until a
// majority of the servers deliver its turn.
func (l *redisRelayLocker) Lock(ctx context.Context) error {
	if err := l.arm(ctx); err != nil {
		return err
	}
	want, free := l.r.join(l)
	if free {
		return eachRedis(l.c.rcs, func(rc *goredis.Client) error { return rc.Set(ctx, l.key, l.ch, floorTTL).Err() })
	}
	need, got := len(l.c.rcs)/2+1, 0
	for got < need {
		payload, err := l.receive(ctx)
		if err != nil {
			return l.leave(ctx, err)
		}
		if payload == want {
			got++
		}
	}
	return nil
}

func (l *redisRelayLocker) receive(ctx context.Context) (string, error) {
	if l.ps != nil {
		m, err := l.ps.ReceiveMessage(ctx)
		if err != nil {
			if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
				// The read timed out at ctx's deadline, maybe just before
				// ctx's own timer: report ctx's end.
				<-ctx.Done()
				return "", ctx.Err()
			}
			return "", err
		}
		return m.Payload, nil
	}
	select {
	case p := <-l.msgs:
		return p, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// leave takes us out of the line after a failed wait; if we were handed
// the lock already, it passes it on.
func (l *redisRelayLocker) leave(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	if l.r.leave(l) {
		return err
	}
	uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return errors.Join(err, l.Unlock(uctx))
}

// Unlock hands the lock to the first in line with one PUBLISH on each
// server, or frees it.
func (l *redisRelayLocker) Unlock(ctx context.Context) error {
	next, ok := l.r.next()
	if !ok {
		return nil
	}
	return eachRedis(l.c.rcs, func(rc *goredis.Client) error { return rc.Publish(ctx, next.w.ch, next.turn).Err() })
}
