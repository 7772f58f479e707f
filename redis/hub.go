package redis

import (
	"context"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// hub multiplexes the release channels of every waiter in the process over
// one pub/sub connection per Client. A channel is subscribed while at
// least one waiter listens on it, and a waiter starts listening only once
// the server has confirmed the subscription, so a release published after
// that is never missed.
type hub struct {
	rc goredis.UniversalClient

	mu     sync.Mutex
	ps     *goredis.PubSub
	chans  map[string]*channel
	closed bool
	quit   chan struct{}
	exited chan struct{}
}

type channel struct {
	subs    map[*listener]struct{}
	pending int           // SUBSCRIBEs sent and not yet confirmed
	ready   chan struct{} // closed when pending reaches 0
	linger  *time.Timer   // unsubscribes an idle channel
}

// lingerTime is how long a channel stays subscribed without listeners, so
// a client that locks the same key again and again does not pay a
// SUBSCRIBE round trip each time.
const lingerTime = 2 * time.Second

// listener is one waiter's view of a channel. C receives the payload of a
// message that passes its filter, and "" after a reconnection, when
// messages may have been missed. The hub never blocks on C: when it is
// full the new payload is dropped, so a waiter must treat any wake as
// "look again" and use the payload only as a shortcut.
type listener struct {
	C      chan string
	name   string
	filter func(payload string) bool
	h      *hub
}

func newHub(rc goredis.UniversalClient) *hub {
	return &hub{rc: rc, chans: map[string]*channel{}, quit: make(chan struct{}), exited: make(chan struct{})}
}

// listen subscribes to name (if no other waiter already has) and returns
// once the subscription is confirmed. Close the listener when done.
func (h *hub) listen(ctx context.Context, name string, filter func(string) bool) (*listener, error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, errClosed
	}
	if h.ps == nil {
		h.ps = h.rc.Subscribe(context.WithoutCancel(ctx))
		go h.run(h.ps)
	}
	ch := h.chans[name]
	if ch == nil {
		ch = &channel{subs: map[*listener]struct{}{}, pending: 1, ready: make(chan struct{})}
		h.chans[name] = ch
		// On error go-redis keeps the channel and resubscribes when it
		// reconnects; the confirmation comes then.
		_ = h.ps.Subscribe(ctx, name)
	}
	if ch.linger != nil {
		ch.linger.Stop()
		ch.linger = nil
	}
	ready := ch.ready
	l := &listener{C: make(chan string, 1), name: name, filter: filter, h: h}
	ch.subs[l] = struct{}{}
	h.mu.Unlock()

	select {
	case <-ready:
		return l, nil
	case <-ctx.Done():
		l.Close()
		return nil, ctx.Err()
	case <-h.quit:
		return nil, errClosed
	}
}

// Close stops listening; the channel is unsubscribed when its last
// listener leaves.
func (l *listener) Close() { l.h.drop(l.name, l) }

func (h *hub) drop(name string, l *listener) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := h.chans[name]
	if ch == nil {
		return
	}
	if l != nil {
		delete(ch.subs, l)
	}
	h.idle(name, ch)
}

// idle unsubscribes ch after lingerTime if nobody listens by then. Called
// with h.mu held.
func (h *hub) idle(name string, ch *channel) {
	if len(ch.subs) > 0 || ch.pending > 0 || h.closed || ch.linger != nil {
		return
	}
	ch.linger = time.AfterFunc(lingerTime, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.chans[name] != ch || len(ch.subs) > 0 || ch.pending > 0 || h.closed {
			return
		}
		delete(h.chans, name)
		_ = h.ps.Unsubscribe(context.Background(), name)
	})
}

func (h *hub) close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	close(h.quit)
	for _, ch := range h.chans {
		if ch.linger != nil {
			ch.linger.Stop()
		}
	}
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
		if err != nil {
			h.lostContact()
			backoff.Reset(delay)
			delay = min(2*delay, time.Second)
			select {
			case <-backoff.C:
			case <-h.quit:
				return
			}
			continue
		}
		delay = 50 * time.Millisecond
		switch m := msg.(type) {
		case *goredis.Subscription:
			if m.Kind == "subscribe" {
				h.confirmed(m.Channel)
			}
		case *goredis.Message:
			h.deliver(m.Channel, m.Payload)
		}
	}
}

func (h *hub) confirmed(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := h.chans[name]
	if ch == nil {
		return
	}
	if ch.pending > 0 {
		ch.pending--
	}
	if ch.pending == 0 {
		select {
		case <-ch.ready:
		default:
			close(ch.ready)
		}
		// A (re)subscription may follow a gap: let every waiter re-check.
		for l := range ch.subs {
			l.poke("")
		}
		h.idle(name, ch) // everyone may have left while we waited
	}
}

func (h *hub) deliver(name, payload string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := h.chans[name]
	if ch == nil {
		return
	}
	for l := range ch.subs {
		if l.filter == nil || l.filter(payload) {
			l.poke(payload)
		}
	}
}

// lostContact wakes every waiter (messages may have been lost) and expects
// go-redis's resubscription to confirm each channel again.
func (h *hub) lostContact() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ch := range h.chans {
		ch.pending = 1
		select {
		case <-ch.ready:
			ch.ready = make(chan struct{})
		default:
		}
		for l := range ch.subs {
			l.poke("")
		}
	}
}

func (l *listener) poke(payload string) {
	select {
	case l.C <- payload:
	default:
	}
}
