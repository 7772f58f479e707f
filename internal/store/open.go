package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/etcd"
	"github.com/batonhq/baton/internal/redact"
	"github.com/batonhq/baton/postgres"
	"github.com/batonhq/baton/redis"
)

// DefaultDialTimeout bounds Open when Options.DialTimeout is zero.
const DefaultDialTimeout = 5 * time.Second

// ErrUnavailable is returned by Open for a store kind this build cannot
// open yet.
var ErrUnavailable = errors.New("store kind not available in this build")

// ErrUnreachable is wrapped by Open's error when the store could not be
// reached within the dial timeout.
var ErrUnreachable = errors.New("cannot reach store")

// Options tune Open.
type Options struct {
	// DialTimeout bounds connecting and establishing the session.
	DialTimeout time.Duration
	// TTL is how long a hold outlives the last confirmed contact with the
	// store; zero means baton.DefaultTTL. Each kind consumes it where its
	// holds live: the session timeout on ZooKeeper and etcd (every hold
	// on the session shares it), each lock's validity on Redis (given to
	// every lock the Store makes).
	TTL time.Duration
	// TLS names the PEM files for a TLS store (zks, etcds, rediss). Open
	// refuses them for a store that is not TLS.
	TLS TLSFiles
	// Telemetry is where the session (or each Redis lock the Store makes)
	// reports metrics and spans; the zero value reports nothing.
	Telemetry baton.Telemetry
	// Recipe names what the caller will make on the store besides plain
	// locks (a command: "elect", "lock --shared (a read lock)", …): Open
	// refuses a kind without sessions (Redis) with an error wrapping
	// ErrLocksOnly that names it, before anything is dialled. "": plain
	// locks only, which every kind makes.
	Recipe string
	// Replicas is how many replicas must acknowledge each Redis lock's
	// acquisition, hand-off and renewal (redis.WithReplicas): on redis://
	// and redis-sentinel:// stores only; 0 waits for none.
	Replicas int
}

// ErrLocksOnly is wrapped by the error of a store kind without sessions
// (Redis) asked for a recipe that needs one (Options.Recipe).
var ErrLocksOnly = errors.New("offers locks only")

// needSession returns an error naming the recipe what when the store kind
// has no sessions (Redis supports locks only), and nil for what "".
func (u URL) needSession(what string) error {
	if what != "" && u.isRedis() {
		return fmt.Errorf("%s needs zk:// or etcd:// (or zks://, etcds://); %s:// %w", what, u.Scheme, ErrLocksOnly)
	}
	return nil
}

// Check returns the error Open would return for u and o before dialling
// anything: a recipe the store kind cannot make (Options.Recipe), TLS
// files for a store that is not TLS, replicas to wait for on a store
// that is not one Redis master (Options.Replicas). A caller with work to do before the
// dial (serving metrics) checks first.
func Check(u URL, o Options) error {
	if err := u.needSession(o.Recipe); err != nil {
		return err
	}
	if err := u.CheckTLS(o.TLS); err != nil {
		return fmt.Errorf("%s: %w", u, err)
	}
	if o.Replicas < 0 || (o.Replicas > 0 && !u.OneRedisMaster()) {
		return fmt.Errorf("%s: %w: %d replicas: --replicas needs one Redis master, redis:// or redis-sentinel://", u, ErrBadReplicas, o.Replicas)
	}
	return nil
}

// Open parses nothing: it opens u, giving up when the dial timeout (or
// ctx) ends. Every backend honours ctx, so Open returns when the backend's
// Open does and never leaves an attempt running: a session that opens is
// the caller's, one that does not is not left behind. A store that cannot
// be reached yields one line wrapping ErrUnreachable (ErrAuth for refused
// credentials) and the backend's error, which errors.Is and errors.As
// still see.
func Open(ctx context.Context, u URL, o Options) (*Store, error) {
	if o.DialTimeout <= 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.TTL <= 0 {
		o.TTL = baton.DefaultTTL
	}
	if err := Check(u, o); err != nil {
		return nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, o.DialTimeout)
	defer cancel()
	s, err := openBackend(dctx, u, o)
	if err == nil {
		s.opts = o
		return s, nil
	}
	e := &backendError{msg: redact.Secrets(oneLine(err), u.Password), err: err}
	switch {
	case errors.Is(err, ErrUnavailable) || errors.Is(err, baton.ErrInvalidTTL) || errors.Is(err, ErrBadTLS):
		return nil, fmt.Errorf("%s: %w", u, e)
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case dctx.Err() != nil || timedOut(err):
		return nil, fmt.Errorf("%w %s within %v: %w", ErrUnreachable, u, o.DialTimeout, e)
	case isAuth(err):
		return nil, fmt.Errorf("%w %s: %w", ErrAuth, u, e)
	}
	return nil, fmt.Errorf("%w %s: %w", ErrUnreachable, u, e)
}

// timedOut reports whether err is a deadline: the context's, or a network
// timeout set from it (go-redis dials and reads with the context's
// deadline, and may see it pass just before the context does).
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// openBackend is open; tests replace it with a backend of their own.
var openBackend = open

// backendError is a backend's error as Open reports it: on one line and
// without the URL's password, while errors.Is and errors.As see the
// original.
type backendError struct {
	msg string
	err error
}

func (e *backendError) Error() string { return e.msg }
func (e *backendError) Unwrap() error { return e.err }

// ErrAuth is wrapped by Open's error when the store refused the
// credentials (wrong, missing, or not allowed).
var ErrAuth = errors.New("store refused the credentials of")

// isAuth reports whether err is an authentication failure of any kind.
func isAuth(err error) bool {
	return etcd.IsAuthError(err) || redis.IsAuthError(err) || postgres.IsAuthError(err)
}

func open(ctx context.Context, u URL, o Options) (*Store, error) {
	switch u.Scheme {
	case Etcd, EtcdTLS:
		return openEtcd(ctx, u, o)
	case ZooKeeper, ZooKeeperTLS:
		return openZK(ctx, u, o)
	case Redis, RedisTLS, Redlock, RedisSentinel, RedisSentinelTLS, RedisCluster, RedisClusterTLS:
		return openRedis(ctx, u, o)
	case Postgres:
		return openPostgres(ctx, u, o)
	}
	return nil, fmt.Errorf("%w: %s", ErrUnavailable, u.Scheme)
}

// oneLine flattens a multi-line error message.
func oneLine(err error) string {
	s := strings.TrimSpace(err.Error())
	s = strings.ReplaceAll(s, "\r", "")
	return strings.ReplaceAll(s, "\n", "; ")
}
