package redis

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// hub is the one pub/sub connection of a Client, subscribed to one channel
// of its own (baton:wake:<random>) for as long as the Client lives. Every
// waiter of every lock on the Client waits on it: a release that hands a
// lock to one of them publishes "<value> <token>" on the channel named in
// the waiter's entry ("<entry> <token>", the entry starting with the
// waiter's value), and the hub passes it to that waiter alone. Nothing
// is subscribed or unsubscribed per lock or per wait.
//
// On Redis Cluster a Client has one hub per hash slot its waiters wait in
// (see shards), each subscribed with SSUBSCRIBE to a sharded channel of
// that slot, since the release script may only publish there.
type hub struct {
	rc      goredis.UniversalClient
	name    string // the channel
	sharded bool   // SSUBSCRIBE to name, on a Redis Cluster client

	mu      sync.Mutex
	ps      *goredis.PubSub
	ready   chan struct{} // closed while the subscription is confirmed
	denial  *denial       // the server's refusal of the subscription, if any
	waiters map[string]*listener
	closed  bool
	quit    chan struct{}
	exited  chan struct{}
}

// listener is one waiter. C receives "<entry> <token>" when the lock was
// handed to it, and "" when messages may have been missed (the connection
// was lost and has come back): the waiter should then look again. The
// hub never blocks on C; a waiter treats any wake as "look again" and a
// grant as a shortcut. With forward set, payloads go to forward (which
// must not block) instead of C.
type listener struct {
	C       chan string
	value   string
	h       *hub
	forward func(payload string)
}

// denial is a refused subscription: err (wrapping baton.ErrPermission)
// once done is closed.
type denial struct {
	done chan struct{}
	err  error
}

func newHub(rc goredis.UniversalClient) *hub { return newHubOn(rc, "baton:wake:"+randomValue(), false) }

func newHubOn(rc goredis.UniversalClient, name string, sharded bool) *hub {
	return &hub{
		rc: rc, name: name, sharded: sharded,
		ready: make(chan struct{}), denial: &denial{done: make(chan struct{})}, waiters: map[string]*listener{},
		quit: make(chan struct{}), exited: make(chan struct{}),
	}
}

// listen registers a waiter for value and returns once the hub's channel
// is subscribed, so that a grant published after the waiter joins a line
// is never missed. The first call on a Client subscribes (one round
// trip) unless prime already has; later calls do no I/O while the
// connection is up. If the server
// refuses the subscription (the user's ACL lacks the channel), listen
// returns that refusal, wrapping baton.ErrPermission, and the next call
// asks again. Close the listener when done.
func (h *hub) listen(ctx context.Context, value string) (*listener, error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, errClosed
	}
	if h.ps == nil {
		h.subscribe(ctx)
	} else if h.denial.err != nil {
		// Refused before: ask again (the ACL may have changed).
		h.denial = &denial{done: make(chan struct{})}
		if h.sharded {
			_ = h.ps.SSubscribe(ctx, h.name)
		} else {
			_ = h.ps.Subscribe(ctx, h.name)
		}
	}
	l := &listener{C: make(chan string, 1), value: value, h: h}
	h.waiters[value] = l
	ready, denied := h.ready, h.denial
	h.mu.Unlock()

	select {
	case <-ready:
		return l, nil
	case <-denied.done:
		l.Close()
		return nil, denied.err
	case <-ctx.Done():
		l.Close()
		return nil, ctx.Err()
	case <-h.quit:
		return nil, errClosed
	}
}

// subscribe starts the subscription of the hub's channel, without
// waiting for it: connecting runs in run's goroutine, so a server that
// accepts connections but never answers holds up nobody (listen waits
// for the confirmation no longer than its ctx). On error go-redis keeps
// the channel and resubscribes when it reconnects. h.mu is held and h.ps
// is nil.
func (h *hub) subscribe(ctx context.Context) {
	ps := h.newPubSub(ctx)
	h.ps = ps
	go func() {
		h.sendSubscribe(ps)
		h.run(ps)
	}()
}

// newPubSub is a pub/sub connection without channels: no I/O.
func (h *hub) newPubSub(ctx context.Context) *goredis.PubSub {
	if h.sharded {
		return h.rc.SSubscribe(context.WithoutCancel(ctx))
	}
	return h.rc.Subscribe(context.WithoutCancel(ctx))
}

// sendSubscribe asks the server for the hub's channel on ps.
func (h *hub) sendSubscribe(ps *goredis.PubSub) {
	if h.sharded {
		_ = ps.SSubscribe(context.Background(), h.name)
	} else {
		_ = ps.Subscribe(context.Background(), h.name)
	}
}

// prime subscribes the hub's channel if nothing has yet, without waiting
// for the confirmation: a Lock that may have to wait calls it before its
// first attempt, so that the subscription's round trip runs alongside
// that attempt instead of after it. A refusal is reported by the next
// listen.
func (h *hub) prime(ctx context.Context) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed && h.ps == nil {
		h.subscribe(ctx)
	}
}

// listenNow registers a waiter for value whose payloads go to forward
// (see listener), if the hub's channel is subscribed now: no I/O, no
// waiting. It returns nil otherwise (listen then subscribes).
func (h *hub) listenNow(value string, forward func(string)) *listener {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.ps == nil {
		return nil
	}
	select {
	case <-h.ready:
	default:
		return nil
	}
	l := &listener{C: make(chan string, 1), value: value, h: h, forward: forward}
	h.waiters[value] = l
	return l
}

// Close stops listening.
func (l *listener) Close() {
	l.h.mu.Lock()
	defer l.h.mu.Unlock()
	if l.h.waiters[l.value] == l {
		delete(l.h.waiters, l.value)
	}
}

// drop stops value's listener, if any.
func (h *hub) drop(value string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.waiters, value)
}

// setForward sends l's payloads to f from now on.
func (l *listener) setForward(f func(string)) {
	l.h.mu.Lock()
	defer l.h.mu.Unlock()
	l.forward = f
}

func (h *hub) close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	close(h.quit)
	ps := h.ps
	h.mu.Unlock()
	if ps != nil {
		_ = ps.Close()
		<-h.exited
	}
}

// run reads the pub/sub connection until the hub closes.
func (h *hub) run(ps *goredis.PubSub) {
	defer close(h.exited)
	backoff := time.NewTimer(0)
	<-backoff.C
	delay := 50 * time.Millisecond
	for {
		msg, err := ps.Receive(context.Background())
		select {
		case <-h.quit:
			return
		default:
		}
		moved := false
		if s, ok := msg.(*goredis.Subscription); ok && err == nil && s.Kind == "sunsubscribe" && s.Channel == h.name {
			// Unasked: the slot moved to another node (a migration, or
			// this node was demoted by a failover).
			moved = true
		}
		if err != nil || moved {
			if err := MapError(err); refused(err) {
				h.refused(err)
			}
			h.lostContact()
			backoff.Reset(delay)
			delay = min(2*delay, h.maxBackoff())
			select {
			case <-backoff.C:
			case <-h.quit:
				return
			}
			if h.sharded {
				// go-redis reconnects a sharded subscription to the node
				// its cached slot map names, and never learns that the
				// slot moved: start over on a fresh map.
				if ps = h.renew(ps); ps == nil {
					return
				}
			}
			continue
		}
		delay = 50 * time.Millisecond
		switch m := msg.(type) {
		case *goredis.Subscription:
			if (m.Kind == "subscribe" || m.Kind == "ssubscribe") && m.Channel == h.name {
				h.confirmed()
			}
		case *goredis.Message:
			if m.Channel == h.name {
				h.deliver(m.Payload)
			}
		}
	}
}

// maxBackoff bounds the wait between two attempts to subscribe again: a
// second; a quarter of one for a sharded channel, whose slot comes back
// at another node once a replica takes over (a failover), where a waiter
// handed the lock meanwhile learns of it only once subscribed again.
func (h *hub) maxBackoff() time.Duration {
	if h.sharded {
		return 250 * time.Millisecond
	}
	return time.Second
}

// renew replaces the sharded subscription old with a new one, on the
// node that owns the channel's slot once the cluster's slot map is read
// again; nil if the hub closed.
func (h *hub) renew(old *goredis.PubSub) *goredis.PubSub {
	if cc, ok := h.rc.(*goredis.ClusterClient); ok {
		cc.ReloadState(context.Background())
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	ps := h.newPubSub(context.Background())
	h.ps = ps
	h.mu.Unlock()
	_ = old.Close()
	h.sendSubscribe(ps) // fails, and run retries, if close closed ps meanwhile
	return ps
}

// confirmed marks the subscription live, and wakes every waiter: after a
// reconnection, a grant may have been published while we were away.
func (h *hub) confirmed() {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.ready:
	default:
		close(h.ready)
	}
	if h.denial.err != nil {
		h.denial = &denial{done: make(chan struct{})}
	}
	for _, l := range h.waiters {
		l.poke("")
	}
}

// refused fails the listen calls waiting for the subscription with err.
func (h *hub) refused(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.denial.err == nil {
		h.denial.err = fmt.Errorf("subscribe to %s: %w", h.name, err)
		close(h.denial.done)
	}
}

// deliver passes "<entry> <token>" to the waiter whose value starts the
// entry.
func (h *hub) deliver(payload string) {
	value, _, ok := strings.Cut(payload, "|")
	if !ok || !strings.Contains(payload, " ") {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if l := h.waiters[value]; l != nil {
		l.poke(payload)
	}
}

// lostContact wakes every waiter (messages may have been lost) and waits
// for go-redis's resubscription to confirm the channel again.
func (h *hub) lostContact() {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.ready:
		h.ready = make(chan struct{})
	default:
	}
	for _, l := range h.waiters {
		l.poke("")
	}
}

func (l *listener) poke(payload string) {
	if l.forward != nil {
		l.forward(payload)
		return
	}
	select {
	case l.C <- payload:
	default:
		if payload != "" {
			// A token beats a pending "look again".
			select {
			case <-l.C:
			default:
			}
			select {
			case l.C <- payload:
			default:
			}
		}
	}
}
