package redis

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/redact"
)

// Client is one Redis server (or a Sentinel-managed master), or one Redis
// Cluster, shared by the locks built on it. It adds to a go-redis client
// the one pub/sub connection that wakes every waiter of this process (on
// a Cluster, one sharded pub/sub connection per hash slot waited in; see
// the package doc).
type Client struct {
	rc     goredis.UniversalClient
	own    bool
	hub    *hub
	shards *shards // on Redis Cluster: the hubs by slot; nil otherwise
	url    string  // redacted, for errors
	srv    *server

	waited waited // keys whose last acquisition here had to wait
	floors floors // per key, the highest token granted here

	closeOnce sync.Once
}

// NewClient wraps a go-redis client. It does no I/O. Set
// ContextTimeoutEnabled on the client's options so that context deadlines
// bound each command (Redlock's per-instance timeout relies on it). Close
// does not close rc.
//
// When rc is a *goredis.Client, NewClient chains a hook onto its
// OnConnect option that reads the server's run_id on every new
// connection (Redlock's restart guard); call it before rc is shared.
func NewClient(rc goredis.UniversalClient) *Client {
	c := &Client{rc: rc, hub: newHub(rc), url: addrOf(rc), srv: &server{}}
	if cc, ok := rc.(*goredis.ClusterClient); ok {
		c.shards = newShards(cc)
		c.srv.cluster = true
	}
	if gc, ok := rc.(*goredis.Client); ok {
		opt := gc.Options()
		prev := opt.OnConnect
		opt.OnConnect = c.srv.onConnect(prev)
		c.srv.hooked = true
	}
	return c
}

// Dial connects to the server named by a URL, redis://[user:pass@]host:port[/db]
// or rediss:// for TLS, or to the Redis Cluster named by
// redis-cluster://[user:pass@]host:port,host:port,… (rediss-cluster:// for
// TLS; any of its nodes will do: the others are found), and checks the
// connection and credentials with a PING, so a wrong password fails here
// with an error satisfying
// IsAuthError. Errors never contain the password. Close the Client when
// done.
//
// go-redis's ParseURL query options apply (dial_timeout, skip_verify, …),
// plus ca_file=PATH: a PEM file of CAs to verify a rediss:// server with
// instead of the system's.
//
// A Sentinel-managed master is named by its sentinels and its master name,
// redis-sentinel://[user:pass@]host:port[,host:port…]/MASTERNAME[/db]
// (rediss-sentinel:// for TLS to the sentinels and the master): the
// Client follows the master through failovers (go-redis's failover
// client). The URL's user and password are the master's; the sentinels'
// own, if they need any, are the query's sentinel_user and
// sentinel_password. Dial asks the sentinels for the master first: an
// error wrapping ErrNoMaster says that none knows the name, or none
// answered. See the package doc ("Sentinel and replicas") and
// WithReplicas.
//
// Options add what a URL cannot say, such as WithTLSConfig.
func Dial(ctx context.Context, rawURL string, opts ...DialOption) (*Client, error) {
	if isClusterURL(rawURL) {
		return dialCluster(ctx, rawURL, opts)
	}
	var d dialConfig
	for _, f := range opts {
		f(&d)
	}
	if isSentinelURL(rawURL) {
		return dialSentinel(ctx, rawURL, d.tls)
	}
	opt, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	if d.tls != nil {
		if opt.TLSConfig == nil {
			return nil, fmt.Errorf("redis: %s: a TLS configuration needs a rediss:// URL", Redact(rawURL))
		}
		opt.TLSConfig = d.tls
	}
	return dialOptions(ctx, opt, Redact(rawURL))
}

// DialOption configures Dial beyond its URL.
type DialOption func(*dialConfig)

type dialConfig struct {
	tls *tls.Config
}

// WithTLSConfig makes Dial use cfg for a rediss:// URL, replacing the TLS
// settings of the URL (ca_file, skip_verify): a CA pool in RootCAs, a
// client certificate in Certificates. cfg.ServerName should be the host
// dialed; for rediss-sentinel://, where cfg serves the sentinels and the
// master alike, leave it empty so that crypto/tls checks each certificate
// against the host that connection dials. Dial fails if the URL is not
// rediss:// (or rediss-sentinel://).
func WithTLSConfig(cfg *tls.Config) DialOption { return func(d *dialConfig) { d.tls = cfg } }

func parseURL(rawURL string) (*goredis.Options, error) {
	safe := Redact(rawURL)
	var caFile string
	if u, err := url.Parse(rawURL); err == nil && u.Query().Has("ca_file") {
		q := u.Query()
		caFile = q.Get("ca_file")
		q.Del("ca_file")
		u.RawQuery = q.Encode()
		rawURL = u.String()
	}
	opt, err := goredis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("redis: bad URL %s: %s", safe, scrub(err.Error(), rawURL))
	}
	if caFile != "" {
		if opt.TLSConfig == nil {
			return nil, fmt.Errorf("redis: bad URL %s: ca_file needs a rediss:// URL", safe)
		}
		pool, err := readCAs(caFile, safe)
		if err != nil {
			return nil, err
		}
		opt.TLSConfig.RootCAs = pool
	}
	opt.ContextTimeoutEnabled = true
	opt.MaxRetries = -1 // lock scripts are retried here, knowing what a retry means
	if opt.DialerRetries <= 0 {
		opt.DialerRetries = 1
	}
	return opt, nil
}

func dialOptions(ctx context.Context, opt *goredis.Options, safe string) (*Client, error) {
	rc := goredis.NewClient(opt)
	c := NewClient(rc)
	if err := rc.Ping(ctx).Err(); err != nil {
		_ = rc.Close()
		return nil, connectError(err, safe, opt.Username, opt.Password)
	}
	c.own, c.url = true, safe
	return c, nil
}

// connectError says why the first PING to the server(s) of a URL failed,
// as user (if any), with password redacted: an authentication error
// wraps baton.ErrPermission.
func connectError(err error, safe, user, password string) error {
	who := ""
	if user != "" {
		who = " as user " + user
	}
	if IsAuthError(err) {
		return fmt.Errorf("redis: authentication to %s%s failed (check the URL's user and password): %w: %w", safe, who, baton.ErrPermission, redact.Error(err, password))
	}
	if err := MapError(err); refused(err) {
		return fmt.Errorf("redis: %s%s: %w", safe, who, redact.Error(err, password))
	}
	return fmt.Errorf("redis: connect to %s%s: %w", safe, who, redact.Error(err, password))
}

// readCAs reads the PEM file of CAs named by a URL's ca_file.
func readCAs(caFile, safe string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("redis: ca_file of %s: %w", safe, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("redis: ca_file %s of %s: no PEM certificates", caFile, safe)
	}
	return pool, nil
}

// IsAuthError reports whether err is a Redis authentication error
// (WRONGPASS, NOAUTH), even when wrapped.
func IsAuthError(err error) bool { return goredis.IsAuthError(err) }

// Redis returns the underlying go-redis client.
func (c *Client) Redis() goredis.UniversalClient { return c.rc }

// String names the server without credentials.
func (c *Client) String() string { return c.url }

// Close stops the client's pub/sub connection, and closes the go-redis
// client if Dial opened it. Locks built on c must not be used afterwards.
func (c *Client) Close() error {
	var err error
	c.closeOnce.Do(func() {
		c.hub.close()
		if c.shards != nil {
			c.shards.close()
		}
		if c.own {
			err = c.rc.Close()
		}
	})
	return err
}

// Redact returns a Redis URL with its password replaced by "xxxxx", for
// logs and errors; raw need not parse.
func Redact(raw string) string { return redact.URL(raw) }

// scrub removes the password of raw, and raw itself, from msg.
func scrub(msg, raw string) string {
	msg = strings.ReplaceAll(msg, raw, Redact(raw))
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		p, _ := u.User.Password()
		msg = redact.Secrets(msg, p)
	}
	return msg
}

func addrOf(rc goredis.UniversalClient) string {
	switch c := rc.(type) {
	case *goredis.Client:
		return "redis://" + c.Options().Addr
	case *goredis.ClusterClient:
		return "redis-cluster://" + strings.Join(c.Options().Addrs, ",")
	}
	return "redis"
}

// hubFor is the hub that wakes the waiters of key: the Client's one hub,
// or on Redis Cluster the one of key's slot.
func (c *Client) hubFor(key string) *hub {
	if c.shards != nil {
		return c.shards.of(key)
	}
	return c.hub
}

// errClosed is returned by waits on a closed Client.
var errClosed = errors.New("redis: client closed")
