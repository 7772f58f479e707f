package zk

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"sync"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// Option configures Open.
type Option func(*options)

type options struct {
	ttl    time.Duration
	chroot string
	auth   []authInfo
	acl    []gozk.ACL
	tls    *tls.Config
	// wrap wraps each connection to a server (over TLS, if any) before
	// the client uses it. Tests set it to inject faults.
	wrap func(net.Conn) net.Conn

	telemetry baton.Telemetry
}

type authInfo struct {
	scheme string
	auth   []byte
}

// WithTTL sets the TTL: how long a holder that goes silent (crashed, cut
// off, paused) keeps its locks before the store gives them to others. On
// ZooKeeper it is the session timeout requested from the server, shared
// by every recipe on the session (default baton.DefaultTTL). The server
// may grant less (its maxSessionTimeout); a TTL below its minimum makes
// Open fail with baton.ErrInvalidTTL.
func WithTTL(d time.Duration) Option { return func(o *options) { o.ttl = d } }

// WithChroot roots every path under prefix (e.g. "/apps/x"), as a
// "host:port/apps/x" connect string does for the Java client.
func WithChroot(prefix string) Option { return func(o *options) { o.chroot = prefix } }

// WithAuth adds credentials to the session, as zkCli's addauth does (e.g.
// "digest", []byte("user:password")), so that it may use nodes whose ACLs
// require them. They are sent again after every reconnection. The nodes
// baton creates are open to all (world:anyone) unless WithACL says
// otherwise: pair it with WithACL(CreatorACL...) so that no other identity
// can break this one's locks.
func WithAuth(scheme string, auth []byte) Option {
	return func(o *options) { o.auth = append(o.auth, authInfo{scheme, append([]byte(nil), auth...)}) }
}

// Open connects to the ZooKeeper ensemble at servers (host:port each) and
// returns a session. It returns once the server has granted a session, or
// with ctx's error if none was granted in time.
func Open(ctx context.Context, servers []string, opts ...Option) (*baton.Session, error) {
	c, err := open(ctx, servers, opts...)
	if err != nil {
		return nil, err
	}
	return baton.NewSession(c, c.tel), nil
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// conn is one ZooKeeper session: baton.Conn.
type conn struct {
	zc     *gozk.Conn
	w      *wire
	chroot string
	ttl    time.Duration // granted by the server
	id     int64
	acl    []gozk.ACL      // of every node we create
	tel    baton.Telemetry // what the session reports to

	trust trusted // who an existing dir may let delete (WithACL)

	done  chan struct{}
	timer *time.Timer

	mu      sync.Mutex
	err     error
	up      chan struct{} // closed while connected with our session
	started chan struct{} // closed at the first session (or failure)
	first   bool
}

var (
	_ backend.Conn         = (*conn)(nil)
	_ backend.WatchCounter = (*conn)(nil)
)

func open(ctx context.Context, servers []string, opts ...Option) (*conn, error) {
	o := options{ttl: baton.DefaultTTL}
	for _, opt := range opts {
		opt(&o)
	}
	if err := checkOpen(servers, &o); err != nil {
		return nil, err
	}
	c := &conn{
		w:       newWire(o.tls, o.wrap, o.ttl),
		chroot:  o.chroot,
		tel:     o.telemetry,
		acl:     gozk.WorldACL(gozk.PermAll),
		trust:   newTrusted(&o),
		done:    make(chan struct{}),
		up:      make(chan struct{}),
		started: make(chan struct{}),
	}
	if o.acl != nil {
		c.acl = expandAuth(o.acl, o.auth)
	}
	zc, _, err := gozk.Connect(servers, o.ttl,
		gozk.WithDialer(c.w.dial),
		gozk.WithHostProvider(&hostProvider{}),
		gozk.WithLogger(nopLogger{}),
		gozk.WithLogInfo(false),
		gozk.WithEventCallback(c.event))
	if err != nil {
		return nil, fmt.Errorf("zk: %w", err)
	}
	c.mu.Lock()
	c.zc = zc
	over := c.err != nil
	c.mu.Unlock()
	if over {
		go zc.Close()
	}
	id, granted, err := c.establish(ctx, servers, o)
	if err != nil {
		c.abort()
		return nil, err
	}
	c.mu.Lock()
	c.id, c.ttl = id, granted
	c.timer = time.AfterFunc(c.limit(), c.watchdog)
	c.mu.Unlock()
	return c, nil
}

// checkOpen checks Open's servers and options, and normalizes the chroot.
func checkOpen(servers []string, o *options) error {
	if len(servers) == 0 {
		return errors.New("zk: no servers given")
	}
	for _, srv := range servers {
		if srv == "" || strings.ContainsAny(srv, "/ ,") {
			return fmt.Errorf("zk: bad server address %q: want host:port, one per element (a chroot goes in WithChroot)", srv)
		}
	}
	if o.ttl <= 0 {
		return fmt.Errorf("%w: %v", baton.ErrInvalidTTL, o.ttl)
	}
	if err := checkACLOptions(o); err != nil {
		return err
	}
	if o.chroot != "" {
		if err := checkPath(o.chroot); err != nil {
			return err
		}
		if o.chroot == "/" {
			o.chroot = ""
		}
	}
	return nil
}

// establish waits for the first session, adds the credentials to it and
// returns its id and the session timeout the server granted. On failure
// the caller aborts c.
func (c *conn) establish(ctx context.Context, servers []string, o options) (id int64, granted time.Duration, err error) {
	select {
	case <-c.started:
	case err := <-c.w.fatal:
		return 0, 0, fmt.Errorf("zk: no session from %v: %w", servers, err)
	case <-ctx.Done():
		if last := c.w.lastError(); last != nil {
			return 0, 0, fmt.Errorf("zk: no session from %v: %w (last error: %w)", servers, ctx.Err(), last)
		}
		return 0, 0, fmt.Errorf("zk: no session from %v: %w", servers, ctx.Err())
	}
	if err := c.Err(); err != nil {
		return 0, 0, err
	}
	for _, a := range o.auth {
		err := c.call(ctx, func() error { return c.zc.AddAuth(a.scheme, a.auth) })
		if err != nil {
			return 0, 0, fmt.Errorf("zk: auth %s: %w", a.scheme, err)
		}
	}
	id, _, granted = c.w.session()
	if granted > o.ttl {
		return 0, 0, fmt.Errorf("%w: %v is below the server's minimum session timeout %v", baton.ErrInvalidTTL, o.ttl, granted)
	}
	return id, granted, nil
}

// event follows go-zookeeper's session states. It runs on the client's
// connection goroutine and must not block.
func (c *conn) event(ev gozk.Event) {
	if ev.Type != gozk.EventSession {
		return
	}
	switch ev.State {
	case gozk.StateHasSession:
		c.mu.Lock()
		select {
		case <-c.up:
		default:
			close(c.up)
		}
		if !c.first {
			c.first = true
			close(c.started)
		}
		c.mu.Unlock()
	case gozk.StateDisconnected, gozk.StateConnecting:
		c.mu.Lock()
		select {
		case <-c.up:
			c.up = make(chan struct{})
		default:
		}
		c.mu.Unlock()
	case gozk.StateExpired:
		c.end(baton.ErrSessionExpired)
	case gozk.StateAuthFailed:
		c.end(fmt.Errorf("%w: authentication failed: %w", baton.ErrSessionLost, baton.ErrPermission))
	}
}

// margin is how long before the server could expire the session we give it
// up: a fifth of the timeout.
func (c *conn) limit() time.Duration { return limitOf(c.ttl) }

// limitOf is how long after the last confirmed contact a session with
// timeout ttl is given up.
func limitOf(ttl time.Duration) time.Duration { return ttl - ttl/5 }

// watchdog ends the session when no reply has been confirmed for the
// timeout minus the margin, connected or not.
func (c *conn) watchdog() {
	select {
	case <-c.done:
		return
	default:
	}
	last := c.w.lastConfirmed()
	if d := time.Until(last.Add(c.limit())); d > 0 {
		c.mu.Lock()
		if c.err == nil {
			c.timer.Reset(d)
		}
		c.mu.Unlock()
		return
	}
	c.end(fmt.Errorf("%w: no reply from ZooKeeper for %v (session timeout %v)",
		baton.ErrSessionLost, time.Since(last).Round(time.Millisecond), c.ttl))
}

// end closes the session with cause err; only the first call counts. The
// go-zookeeper client is closed in the background (that sends closeSession
// if the server can still be reached, removing our ephemeral nodes).
func (c *conn) end(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	if c.timer != nil {
		c.timer.Stop()
	}
	if !c.first {
		c.first = true
		close(c.started)
	}
	close(c.done)
	zc := c.zc
	c.mu.Unlock()
	if errors.Is(err, baton.ErrSessionExpired) {
		c.w.stop() // never let go-zookeeper open a new session
	}
	if zc != nil && !errors.Is(err, baton.ErrClosed) {
		go zc.Close()
	}
}

// abort gives up a session Open will not return: go-zookeeper stops
// retrying and closes the session if it got one.
func (c *conn) abort() {
	c.end(baton.ErrClosed)
	c.w.stop()
	go c.zc.Close()
}

func (c *conn) ID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return ownerID(c.id)
}

// ownerID formats an ephemeralOwner as ZooKeeper shows session ids. Zero
// (persistent) and the markers of container and TTL nodes are "".
func ownerID(id int64) string {
	if id == 0 || id == math.MinInt64 || uint64(id)>>56 == 0xff {
		return ""
	}
	return fmt.Sprintf("%#x", uint64(id))
}

func (c *conn) TTL() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ttl
}

func (c *conn) Done() <-chan struct{} { return c.done }

func (c *conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close ends the session: the server removes its ephemeral nodes before
// Close returns, unless ctx ends first or the server cannot be reached.
func (c *conn) Close(ctx context.Context) error {
	c.end(baton.ErrClosed)
	ch := make(chan struct{})
	go func() {
		c.zc.Close()
		c.w.stop()
		close(ch)
	}()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Expiry is when the session will be given up as lost unless a reply from
// the server is confirmed before: the last confirmed contact plus the
// session timeout minus the margin (baton.Expirer). It is the zero Time
// once the session has ended.
func (c *conn) Expiry() time.Time {
	select {
	case <-c.done:
		return time.Time{}
	default:
	}
	return c.w.lastConfirmed().Add(c.limit())
}

// WatchEvents is the number of watch notifications the server has sent
// this session, less those of its own deletes (a holder told of its own
// release), so that a herd-free release raises the total by one.
func (c *conn) WatchEvents() int64 { return c.w.watches.Load() }

// Requests is the number of requests this session has sent the server,
// pings excluded. The bench reads it through an interface assertion.
func (c *conn) Requests() int64 { return c.w.requests.Load() }
