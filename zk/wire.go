package zk

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/internal/telemetry"
)

// ZooKeeper opcodes and special xids the wire tap reads.
const (
	opCreate          = 1
	opCreate2         = 15
	opCreateContainer = 19
	opCreateTTL       = 21
	xidNotification   = -1
	xidPing           = -2
	maxKeep           = 4096 // bytes of a frame body kept for parsing
)

var errRefused = errors.New("zk: session over, not reconnecting")

// wire taps the TCP stream between go-zookeeper and the server. The
// client library hides three things baton needs, all of which are on the
// wire:
//
//   - when contact with the server was last confirmed: the send time of the
//     request whose reply was read most recently (the server touched the
//     session no earlier than that), which bounds when the server can expire
//     the session;
//   - the zxid of each create (the reply header's zxid is the new node's
//     czxid), so that a create returns its fencing token without another
//     round trip;
//   - the negotiated session timeout, id and password.
//
// It also counts requests and watch notifications.
type wire struct {
	mu        sync.Mutex
	confirmed time.Time
	sessionID int64
	passwd    []byte
	timeout   time.Duration
	zxids     map[string]int64 // created path → czxid, until taken
	refuse    bool             // dial no more: the session is over
	lastErr   error            // the last dial or connection error, for Open's

	tls       *tls.Config             // WithTLS, or nil
	wrap      func(net.Conn) net.Conn // wraps each connection under the tap, or nil
	handshake time.Duration           // bound of a TLS handshake
	fatal     chan error              // a certificate the client will never accept

	requests atomic.Int64
	watches  atomic.Int64

	renewals telemetry.Renewals // told of each reply that confirms contact
	// mine counts deletes this session has sent, by server path, until
	// the server's notification of each comes back: a holder that watches
	// its own node is told of its own release, which wakes no waiter and
	// is not counted in watches.
	mine map[string]int
}

// minHandshake is the least time a TLS handshake is given: go-zookeeper
// dials with a one-second timeout, short for a JVM's first handshake.
const minHandshake = 5 * time.Second

func newWire(cfg *tls.Config, wrap func(net.Conn) net.Conn, ttl time.Duration) *wire {
	return &wire{zxids: map[string]int64{}, mine: map[string]int{}, tls: cfg, wrap: wrap, handshake: max(ttl, minHandshake), fatal: make(chan error, 1)}
}

// dial is the zk.Dialer: it refuses once the session is over, so that
// go-zookeeper never opens a new session behind our back.
func (w *wire) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	w.mu.Lock()
	refuse := w.refuse
	w.mu.Unlock()
	if refuse {
		return nil, errRefused
	}
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		w.setLastError(err)
		return nil, err
	}
	if w.tls != nil {
		c, err = w.tlsHandshake(c, addr)
		if err != nil {
			w.setLastError(err)
			return nil, err
		}
	}
	if w.wrap != nil {
		c = w.wrap(c)
	}
	wc := &tapConn{Conn: c, w: w}
	wc.out.handshake, wc.in.handshake = true, true
	return wc, nil
}

// tlsHandshake runs the TLS client handshake over c, bounded in time. A
// certificate the client rejects is also reported on w.fatal: retrying
// will not change it.
func (w *wire) tlsHandshake(c net.Conn, addr string) (net.Conn, error) {
	cfg := w.tls.Clone()
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg.ServerName = host
	}
	tc := tls.Client(c, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), w.handshake)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = c.Close()
		if errors.Is(err, io.EOF) || strings.Contains(err.Error(), "does not look like a TLS handshake") {
			err = fmt.Errorf("zk: TLS handshake with %s (is it the server's secure client port?): %w", addr, err)
		} else {
			err = fmt.Errorf("zk: TLS handshake with %s: %w", addr, err)
		}
		if badCertificate(err) {
			select {
			case w.fatal <- err:
			default:
			}
		}
		return nil, err
	}
	return tc, nil
}

// badCertificate reports whether err is the client's rejection of the
// server's certificate.
func badCertificate(err error) bool {
	var verr *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var host x509.HostnameError
	return errors.As(err, &verr) || errors.As(err, &unknown) || errors.As(err, &invalid) || errors.As(err, &host)
}

// setLastError records a connection's failure for Open's error message.
func (w *wire) setLastError(err error) {
	w.mu.Lock()
	w.lastErr = err
	w.mu.Unlock()
}

// lastError is the last dial or connection error seen, or nil.
func (w *wire) lastError() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastErr
}

// stop makes dial refuse from now on.
func (w *wire) stop() {
	w.mu.Lock()
	w.refuse = true
	w.mu.Unlock()
}

// lastConfirmed is when contact with the server was last confirmed.
func (w *wire) lastConfirmed() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.confirmed
}

// session returns the id, password and timeout of the last handshake.
func (w *wire) session() (int64, []byte, time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sessionID, append([]byte(nil), w.passwd...), w.timeout
}

// takeZxid returns (and forgets) the czxid of the node created at path.
func (w *wire) takeZxid(path string) (int64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	z, ok := w.zxids[path]
	delete(w.zxids, path)
	return z, ok
}

// forget drops the czxid of path, if recorded.
func (w *wire) forget(path string) {
	w.mu.Lock()
	delete(w.zxids, path)
	w.mu.Unlock()
}

// tapConn is one TCP connection through the tap. Reads and writes each run
// on one go-zookeeper goroutine; the shared state is under wire.mu.
type tapConn struct {
	net.Conn
	w   *wire
	out framer
	in  framer

	sent    []time.Time    // send times of requests awaiting replies, FIFO
	creates map[int32]bool // create requests awaiting replies: xid → plain create
}

func (c *tapConn) Write(p []byte) (int, error) {
	now := time.Now()
	c.out.feed(p, func(body []byte, handshake bool) { c.request(now, body, handshake) })
	return c.Conn.Write(p)
}

func (c *tapConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		if errors.Is(err, io.EOF) {
			msg := "zk: the server closed the connection"
			if c.in.handshake && c.w.tls == nil {
				msg += " before the session handshake (if it is a secure client port, use WithTLS)"
			}
			c.w.setLastError(errors.New(msg))
		} else {
			c.w.setLastError(err)
		}
	}
	if n > 0 {
		c.in.feed(p[:n], c.reply)
	}
	return n, err
}

func (c *tapConn) request(now time.Time, body []byte, handshake bool) {
	w := c.w
	w.mu.Lock()
	defer w.mu.Unlock()
	c.sent = append(c.sent, now)
	if handshake || len(body) < 8 {
		return
	}
	xid := int32(binary.BigEndian.Uint32(body))
	op := int32(binary.BigEndian.Uint32(body[4:]))
	if xid == xidPing {
		return
	}
	w.requests.Add(1)
	switch op {
	case opCreate, opCreate2, opCreateContainer, opCreateTTL:
		if c.creates == nil {
			c.creates = map[int32]bool{}
		}
		c.creates[xid] = op == opCreate
	}
}

func (c *tapConn) reply(body []byte, handshake bool) {
	w := c.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if handshake {
		c.confirm()
		// protocolVersion int32, timeOut int32, sessionId int64, passwd buffer
		if len(body) >= 20 {
			w.timeout = time.Duration(int32(binary.BigEndian.Uint32(body[4:]))) * time.Millisecond
			w.sessionID = int64(binary.BigEndian.Uint64(body[8:]))
			if l := int(int32(binary.BigEndian.Uint32(body[16:]))); l >= 0 && 20+l <= len(body) {
				w.passwd = append(w.passwd[:0], body[20:20+l]...)
			}
		}
		return
	}
	if len(body) < 16 {
		return
	}
	xid := int32(binary.BigEndian.Uint32(body))
	if xid == xidNotification {
		if !w.ownDelete(body[16:]) {
			w.watches.Add(1)
		}
		return
	}
	c.confirm()
	plain, isCreate := c.creates[xid]
	if !isCreate {
		return
	}
	delete(c.creates, xid)
	zxid := int64(binary.BigEndian.Uint64(body[4:]))
	if binary.BigEndian.Uint32(body[12:]) != 0 || len(body) < 20 {
		return
	}
	if !plain {
		return // containers: nobody asks for their zxid
	}
	l := int(int32(binary.BigEndian.Uint32(body[16:])))
	if l < 0 || 20+l > len(body) {
		return
	}
	if len(w.zxids) > 10000 { // callers that gave up never take theirs
		clear(w.zxids)
	}
	w.zxids[string(body[20:20+l])] = zxid
}

// confirm records a reply: the oldest request in flight was sent no later
// than the one answered, so its send time is a safe lower bound for when
// the server last heard from us. Called with w.mu held.
func (c *tapConn) confirm() {
	if len(c.sent) == 0 {
		return
	}
	t := c.sent[0]
	c.sent = c.sent[1:]
	if t.After(c.w.confirmed) {
		old := c.w.confirmed
		c.w.confirmed = t
		if c.w.renewals.Reporting() && !old.IsZero() && c.w.timeout > 0 {
			c.w.renewals.Renewed(time.Until(old.Add(limitOf(c.w.timeout))))
		}
	}
}

// framer splits a stream of length-prefixed ZooKeeper frames, keeping the
// first maxKeep bytes of each body. The first frame of a connection is the
// session handshake.
type framer struct {
	hdr       [4]byte
	hn        int    // bytes of hdr filled
	need      int    // body bytes still to come
	body      []byte // kept part of the body
	handshake bool
}

func (f *framer) feed(p []byte, frame func(body []byte, handshake bool)) {
	for len(p) > 0 {
		if f.hn < 4 {
			k := copy(f.hdr[f.hn:], p)
			f.hn += k
			p = p[k:]
			if f.hn < 4 {
				return
			}
			f.need = int(int32(binary.BigEndian.Uint32(f.hdr[:])))
			if f.need < 0 {
				f.need = 0
			}
			f.body = f.body[:0]
		}
		k := min(f.need, len(p))
		if keep := min(k, maxKeep-len(f.body)); keep > 0 {
			f.body = append(f.body, p[:keep]...)
		}
		f.need -= k
		p = p[k:]
		if f.need == 0 {
			frame(f.body, f.handshake)
			f.handshake = false
			f.hn = 0
		}
	}
}

// eventNodeDeleted is a WatcherEvent's type for a deleted node.
const eventNodeDeleted = 2

// deleting notes that this session sends a delete of path (on the server),
// or with done, that the delete failed and will send no notification.
func (w *wire) deleting(path string, done bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case !done:
		if len(w.mine) > 10000 { // deletes whose outcome was never known
			clear(w.mine)
		}
		w.mine[path]++
	case w.mine[path] > 1:
		w.mine[path]--
	default:
		delete(w.mine, path)
	}
}

// ownDelete reports whether the WatcherEvent ev (type int32, state int32,
// path string) tells of a delete this session sent, and forgets it.
// Caller holds mu.
func (w *wire) ownDelete(ev []byte) bool {
	if len(ev) < 12 || int32(binary.BigEndian.Uint32(ev)) != eventNodeDeleted {
		return false
	}
	l := int(int32(binary.BigEndian.Uint32(ev[8:])))
	if l < 0 || 12+l > len(ev) {
		return false
	}
	path := string(ev[12 : 12+l])
	if w.mine[path] == 0 {
		return false
	}
	if w.mine[path]--; w.mine[path] == 0 {
		delete(w.mine, path)
	}
	return true
}
