package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/etcdprobe"
	"github.com/batonhq/baton/internal/telemetry"
)

// Option configures Open.
type Option func(*options)

type options struct {
	ttl            time.Duration
	client         *clientv3.Client
	user, password string
	tls            *tls.Config
	telemetry      baton.Telemetry
}

// WithTTL sets the TTL: how long a holder that goes silent (crashed, cut
// off, paused) keeps its locks before the store gives them to others. On
// etcd it is the session's lease TTL, shared by every recipe on the
// session (default baton.DefaultTTL). etcd counts TTLs in whole seconds:
// a fractional TTL is rounded up; a TTL under one second, or under the
// server's minimum lease TTL, makes Open fail with baton.ErrInvalidTTL.
func WithTTL(ttl time.Duration) Option { return func(o *options) { o.ttl = ttl } }

// WithClient makes the session use an existing client instead of dialing
// the endpoints. The client is not closed by Session.Close.
func WithClient(c *clientv3.Client) Option { return func(o *options) { o.client = c } }

// WithAuth makes Open authenticate as user with password, for a server
// with authentication enabled. A wrong password fails Open at once with an
// error satisfying IsAuthError; no error ever contains the password.
// Ignored with WithClient (configure that client's credentials instead).
func WithAuth(user, password string) Option {
	return func(o *options) { o.user, o.password = user, password }
}

// WithTLS makes Open connect over TLS with cfg (its RootCAs verify the
// server; its Certificates are the client certificate, for a server that
// requires one). Endpoints are then host:port or https://host:port; an
// http:// endpoint is an error. Ignored with WithClient.
func WithTLS(cfg *tls.Config) Option { return func(o *options) { o.tls = cfg } }

// dialTimeout bounds the first connection to the endpoints.
const dialTimeout = 5 * time.Second

// Open dials endpoints (unless WithClient is given), grants a lease and
// returns a session kept alive by it. The session is lost locally when no
// keepalive has been acknowledged for the granted TTL minus a margin,
// counted from the moment the last acknowledged keepalive was sent.
func Open(ctx context.Context, endpoints []string, opts ...Option) (*baton.Session, error) {
	c, err := open(ctx, endpoints, opts...)
	if err != nil {
		return nil, err
	}
	return baton.NewSession(c, c.tel), nil
}

// conn implements baton.Conn on one etcd lease.
type conn struct {
	cli    *clientv3.Client
	ownCli bool
	lease  clientv3.LeaseID
	id     string // lease id in hex
	ttl    time.Duration

	lifetime               // Done, Err and end; life ends with the session
	kaDone   chan struct{} // closed when the keepalive loop has returned
	bg       background    // key watch readers and forget's deletes: Close stops it

	reserved keySet   // keys of this session that may exist
	gone     goneDirs // kept listings, by directory prefix (gone.go)

	holdMu sync.Mutex           // guards holds and their keyWatch
	holds  map[string]*keyWatch // kept watches of our own keys (held.go)

	watchEvents atomic.Int64
	expiry      deadline // the keepalive loop's loss deadline

	telemetry.Renewals                 // told of each acknowledged keepalive
	tel                baton.Telemetry // what the session reports to

	// seen is the highest store revision this session has observed (in a
	// reply or a watch event).
	seen highWater

	// oldWatch is set for servers before 3.6 (see armGone).
	oldWatch bool

	// credsIgnored is set when WithAuth's credentials went to a server
	// with authentication off (CredentialsIgnored).
	credsIgnored bool
}

var (
	_ backend.Conn         = (*conn)(nil)
	_ backend.CreateLister = (*conn)(nil)
	_ backend.WatchCounter = (*conn)(nil)
)

func open(ctx context.Context, endpoints []string, opts ...Option) (*conn, error) {
	o := options{ttl: baton.DefaultTTL}
	for _, f := range opts {
		f(&o)
	}
	if o.ttl < time.Second {
		return nil, fmt.Errorf("%w: etcd: ttl %v is under one second", baton.ErrInvalidTTL, o.ttl)
	}
	if o.client != nil {
		return start(ctx, o.client, false, nil, o)
	}
	cli, watch, err := dial(ctx, endpoints, o)
	if err != nil {
		return nil, err
	}
	c, err := start(ctx, cli, true, watch, o)
	if err != nil {
		_ = cli.Close()
	}
	return c, err
}

// dial makes a client of endpoints. Its watch explains later failures to
// reach them.
func dial(ctx context.Context, endpoints []string, o options) (*clientv3.Client, *dialWatch, error) {
	if o.tls != nil {
		for _, ep := range endpoints {
			if strings.HasPrefix(ep, "http://") {
				return nil, nil, fmt.Errorf("etcd: endpoint %s is not TLS: use https:// (or host:port) with WithTLS", ep)
			}
		}
	}
	if (o.user == "") != (o.password == "") {
		return nil, nil, errors.New("etcd: WithAuth needs both a user name and a password")
	}
	// The client's dial timeout bounds its authentication: ctx's deadline
	// when it has one.
	timeout := dialTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(d), time.Millisecond)
	}
	if o.tls != nil {
		if err := probeTLS(ctx, endpoints, o.tls); err != nil {
			return nil, nil, err
		}
	}
	watch := &dialWatch{plain: o.tls == nil}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          timeout,
		DialKeepAliveTime:    time.Second,
		DialKeepAliveTimeout: time.Second,
		Context:              context.WithoutCancel(ctx),
		Logger:               zap.NewNop(), // errors reach the caller; the client's retries are noise
		Username:             o.user,
		Password:             o.password,
		TLS:                  o.tls,
		DialOptions:          []grpc.DialOption{grpc.WithContextDialer(watch.dial), grpc.WithConnectParams(reconnect)},
	})
	if err != nil {
		return nil, nil, dialError(endpoints, o.user, o.password, watch.explain(err))
	}
	return cli, watch, nil
}

// start checks the credentials of a client we dialed (own), grants the
// lease and starts keeping it alive. watch is nil for the user's client.
func start(ctx context.Context, cli *clientv3.Client, own bool, watch *dialWatch, o options) (*conn, error) {
	// A client certificate may be the credentials: etcd takes its common
	// name as the user name of requests without a password.
	if own && o.user == "" && (o.tls == nil || len(o.tls.Certificates) == 0 && o.tls.GetClientCertificate == nil) {
		if err := checkAuth(ctx, cli); err != nil {
			return nil, watch.explain(err)
		}
	}
	// The client accepts credentials given to a server with
	// authentication off without a word: remember it, to say so.
	ignored := own && o.user != "" && authOff(ctx, cli)
	g, sent, err := grantTTL(ctx, cli, o.ttl, watch)
	if err != nil {
		return nil, err
	}
	c := &conn{
		cli:          cli,
		ownCli:       own,
		lease:        g.ID,
		id:           strconv.FormatInt(int64(g.ID), 16),
		ttl:          time.Duration(g.TTL) * time.Second,
		tel:          o.telemetry,
		lifetime:     newLifetime(),
		kaDone:       make(chan struct{}),
		reserved:     keySet{m: map[string]bool{}},
		credsIgnored: ignored,
		gone:         goneDirs{m: map[string]*goneCache{}},
		holds:        map[string]*keyWatch{},
	}
	c.oldWatch = oldWatchServer(ctx, cli)
	c.expiry.set(sent.Add(c.ttl - c.ttl/10))
	go c.keepAlive(sent)
	return c, nil
}

// grantTTL grants a lease of ttl rounded up to whole seconds. A server
// that grants another TTL (its minimum) is refused: the lease is revoked.
func grantTTL(ctx context.Context, cli *clientv3.Client, ttl time.Duration, watch *dialWatch) (*clientv3.LeaseGrantResponse, time.Time, error) {
	secs := int64((ttl + time.Second - 1) / time.Second)
	g, sent, err := grant(ctx, cli, secs)
	if err != nil {
		return nil, sent, grantError(watch.explain(err))
	}
	if g.TTL != secs {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dialTimeout)
		_, _ = cli.Revoke(rctx, g.ID)
		cancel()
		return nil, sent, fmt.Errorf("%w: etcd: asked for a %ds lease, the server grants %ds (its minimum lease TTL)",
			baton.ErrInvalidTTL, secs, g.TTL)
	}
	return g, sent, nil
}

// reconnect is how the client reconnects to a member it lost: gRPC's
// default backoff grows to two minutes, so a client whose members all
// restarted (or that lost its only one for a while) could wait for
// seconds after they serve again. These pauses stay under a second.
var reconnect = grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
	MinConnectTimeout: dialTimeout,
}

// grant grants a lease of secs seconds and returns it with the send time
// of the try that got it. A try that runs out of time (attempt.go) is made
// again; one given up may still have granted a lease, which, with no key
// on it, expires unused.
func grant(ctx context.Context, cli *clientv3.Client, secs int64) (*clientv3.LeaseGrantResponse, time.Time, error) {
	for n := 0; ; n++ {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout(n))
		sent := time.Now()
		g, err := cli.Grant(actx, secs)
		timedOut := actx.Err() != nil
		cancel()
		if err == nil || ctx.Err() != nil || !timedOut {
			return g, sent, err
		}
		if err := sleepCtx(ctx, ctx, retryDelay); err != nil {
			return nil, sent, err
		}
	}
}

func (c *conn) ID() string         { return c.id }
func (c *conn) TTL() time.Duration { return c.ttl }

// Expiry is when the session will be given up as lost unless a keepalive
// is acknowledged before: the send time of the last acknowledged one plus
// the TTL minus the margin (baton.Expirer). It is the zero Time once the
// session has ended.
func (c *conn) Expiry() time.Time {
	select {
	case <-c.done:
		return time.Time{}
	default:
	}
	return c.expiry.get()
}

// WatchEvents is the number of watch events this session has received.
func (c *conn) WatchEvents() int64 { return c.watchEvents.Load() }

// closeTimeout bounds the lease revoke when ctx has no deadline.
const closeTimeout = 5 * time.Second

// Close revokes the lease, which deletes every ephemeral key of the
// session, and ends the session with ErrClosed.
func (c *conn) Close(ctx context.Context) error {
	var err error
	if c.Err() == nil {
		rctx, cancel := context.WithTimeout(ctx, closeTimeout)
		_, err = c.cli.Revoke(rctx, c.lease)
		cancel()
		if err != nil {
			err = fmt.Errorf("etcd: revoke lease %s: %w", c.id, err)
		}
	}
	c.end(baton.ErrClosed)
	<-c.kaDone
	c.bg.stop()
	if c.ownCli {
		if cerr := c.cli.Close(); cerr != nil && err == nil && !errors.Is(cerr, context.Canceled) {
			err = cerr
		}
	}
	return err
}

// oldWatchServer reports whether the server is older than 3.6, where a
// watch "from now" can land in the unsynced group (see armGone). An
// unknown version counts as new. The first member to answer speaks for
// the cluster: asking them in turn would cost the whole dial timeout for
// each one that is down.
func oldWatchServer(ctx context.Context, cli *clientv3.Client) bool {
	eps := cli.Endpoints()
	if len(eps) == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	st, err := etcdprobe.FirstStatus(ctx, cli, eps)
	if err != nil {
		return false
	}
	var major, minor int
	if _, err := fmt.Sscanf(st.Version, "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major < 3 || major == 3 && minor < 6
}

// withLife returns a context for one request: ctx, also cancelled when the
// session ends.
func (c *conn) withLife(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.life, cancel)
	return ctx, func() { stop(); cancel() }
}

// fail turns a request error into what the caller sees: ctx's error when
// it is done, the session's error when the session ended, else err.
func (c *conn) fail(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		c.end(baton.ErrSessionExpired)
	}
	if serr := c.Err(); serr != nil {
		return serr
	}
	if IsAuthError(err) {
		return fmt.Errorf("etcd: %s: not allowed (check the credentials and the user's roles): %w: %w", op, baton.ErrPermission, err)
	}
	if IsNoSpace(err) {
		return fmt.Errorf("etcd: %s: %s: %w", op, noSpaceHint, err)
	}
	return fmt.Errorf("etcd: %s: %w", op, err)
}
