// Package store turns a `--store` URL into an open baton session (ZooKeeper,
// etcd) or Redis lock client, with a bounded dial. It is the one place the
// command line knows about the backends.
package store

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/layout"
	"github.com/batonhq/baton/internal/redact"
)

// Default is the store used when neither --store nor BATON_STORE is set:
// what `baton serve` listens on.
const Default = "etcd://127.0.0.1:2379"

// Store kinds (URL schemes).
const (
	ZooKeeper    = "zk"
	ZooKeeperTLS = "zks"
	Etcd         = "etcd"
	EtcdTLS      = "etcds"
	Redis        = "redis"
	RedisTLS     = "rediss"
	Redlock      = "redlock"
	// RedisSentinel and RedisSentinelTLS name a Sentinel-managed master by
	// its sentinels and its master name.
	RedisSentinel    = "redis-sentinel"
	RedisSentinelTLS = "rediss-sentinel"
	Postgres         = "postgres" // also spelled postgresql://
	// RedisCluster and RedisClusterTLS name a Redis Cluster by some of
	// its nodes.
	RedisCluster    = "redis-cluster"
	RedisClusterTLS = "rediss-cluster"
)

// schemes lists the kinds for messages.
const schemes = "zk, zks, etcd, etcds, redis, rediss, redis-sentinel, rediss-sentinel, redlock, redis-cluster, rediss-cluster or postgres"

// defaultPort is the port assumed for a host given without one.
var defaultPort = map[string]string{
	ZooKeeper:    "2181",
	ZooKeeperTLS: "2281", // ZooKeeper's usual secureClientPort
	Etcd:         "2379",
	EtcdTLS:      "2379",
	Redis:        "6379",
	RedisTLS:     "6379",
	Redlock:      "6379",
	// Sentinel's usual port.
	RedisSentinel:    "26379",
	RedisSentinelTLS: "26379",
	RedisCluster:     "6379",
	RedisClusterTLS:  "6379",
}

// ErrBadURL is wrapped by every URL parse error.
var ErrBadURL = errors.New("bad store URL")

// ErrHalfCredentials is wrapped by the parse error of a ZooKeeper or etcd
// URL with a user and no password, or the reverse.
var ErrHalfCredentials = errors.New("credentials are USER:PASSWORD@, both non-empty")

// URL is a parsed store URL.
type URL struct {
	// Scheme is the store kind: zk, zks, etcd, etcds, redis, rediss,
	// redlock, redis-cluster or rediss-cluster.
	Scheme string
	// TLS is set for the kinds that connect over TLS: zks, etcds, rediss
	// and rediss-cluster.
	TLS bool
	// Hosts are host:port pairs, each with its port filled in.
	Hosts []string
	// User and Password are the credentials, if any: ZooKeeper digest
	// auth, etcd user auth, Redis ACL user (or requirepass). Password is
	// never printed: String and Redact hide it.
	User, Password string
	// Chroot is the ZooKeeper chroot ("/a/b"), "" for none.
	Chroot string
	// DB is the Redis database number.
	DB int
	// Master is a redis-sentinel:// URL's master name; SentinelUser and
	// SentinelPassword, from its query, the sentinels' own credentials
	// (User and Password are the master's). SentinelPassword is never
	// printed.
	Master, SentinelUser, SentinelPassword string
	// Database and Query are a postgres:// URL's path (the database) and
	// query (libpq's parameters and baton's schema=), as given.
	Database, Query string
}

// Parse parses a store URL:
//
//	zk://[user:pass@]h:p[,h:p…][/chroot]   zks://… (TLS, port 2281)
//	etcd://[user:pass@]h:p[,h:p…]          etcds://… (TLS)
//	redis://[user:pass@]h:p[/db]           rediss://… (TLS)
//	redlock://[user:pass@]h:p,h:p,…[/db]
//	redis-sentinel://[user:pass@]h:p[,h:p…]/MASTER[/db][?sentinel_user=U&sentinel_password=P]
//	rediss-sentinel://… (TLS, to the sentinels and the master)
//	redis-cluster://[user:pass@]h:p,h:p,…  rediss-cluster://… (TLS)
//
// A host without a port gets the store's usual port. The empty string is
// Default. User and password may be percent-escaped; the password ends at
// the last "@". Errors never show the password.
func Parse(raw string) (URL, error) {
	if raw == "" {
		raw = Default
	}
	u, err := parse(raw)
	if err != nil {
		return URL{}, fmt.Errorf("%w %q: %w", ErrBadURL, redact.URL(raw), err)
	}
	return u, nil
}

func parse(raw string) (URL, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return URL{}, errors.New("want SCHEME://HOST:PORT (" + schemes + ")")
	}
	u := URL{Scheme: strings.ToLower(scheme)}
	if u.Scheme == Postgres || u.Scheme == "postgresql" {
		return parsePostgres(raw)
	}
	if u.IsSentinel() {
		var query string
		rest, query, _ = strings.Cut(rest, "?")
		if err := u.setSentinelQuery(query); err != nil {
			return URL{}, err
		}
	}
	if strings.ContainsAny(rest, "?#") {
		return URL{}, errors.New("query and fragment are not supported")
	}
	// Credentials end at the last "@", so an unescaped "/" or "@" in a
	// password still parses (and is redacted the same way by Redact).
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		if err := u.setUser(rest[:i]); err != nil {
			return URL{}, err
		}
		rest = rest[i+1:]
	}
	authority, path, hasPath := strings.Cut(rest, "/")
	switch u.Scheme {
	case ZooKeeper, ZooKeeperTLS, Etcd, EtcdTLS, Redis, RedisTLS, Redlock, RedisSentinel, RedisSentinelTLS:
	case RedisCluster, RedisClusterTLS:
		if path != "" {
			return URL{}, fmt.Errorf("%s:// takes no database: a cluster has only database 0", u.Scheme)
		}
	default:
		return URL{}, fmt.Errorf("unknown scheme %q (want %s)", scheme, schemes)
	}
	u.TLS = u.Scheme == ZooKeeperTLS || u.Scheme == EtcdTLS || u.Scheme == RedisTLS || u.Scheme == RedisSentinelTLS || u.Scheme == RedisClusterTLS
	if (u.User != "" || u.Password != "") && (u.User == "" || u.Password == "") && !u.isRedis() {
		return URL{}, fmt.Errorf("%s:// %w", u.Scheme, ErrHalfCredentials)
	}
	if authority == "" {
		return URL{}, errors.New("no host")
	}
	for _, h := range strings.Split(authority, ",") {
		hp, err := hostPort(h, defaultPort[u.Scheme])
		if err != nil {
			return URL{}, err
		}
		if slices.Contains(u.Hosts, hp) {
			// One server counted twice would make a Redlock majority of
			// one, and a ZooKeeper or etcd list lie about its size.
			return URL{}, fmt.Errorf("host %s listed twice", hp)
		}
		u.Hosts = append(u.Hosts, hp)
	}
	if len(u.Hosts) > 1 && (u.Scheme == Redis || u.Scheme == RedisTLS) {
		return URL{}, fmt.Errorf("%s:// takes one host (use redlock:// for several)", u.Scheme)
	}
	switch {
	case u.IsZooKeeper():
		if hasPath {
			c, err := chroot("/" + path)
			if err != nil {
				return URL{}, err
			}
			u.Chroot = c
		}
	case u.IsSentinel():
		master, db, hasDB := strings.Cut(path, "/")
		if master == "" {
			return URL{}, fmt.Errorf("%s:// needs a master name: %s://HOST:PORT[,HOST:PORT…]/MASTERNAME", u.Scheme, u.Scheme)
		}
		if strings.ContainsAny(master, " \t\r\n%") {
			return URL{}, fmt.Errorf("master name %q has a space, a control character or %%", master)
		}
		u.Master = master
		if hasDB {
			n, err := strconv.Atoi(db)
			if err != nil || n < 0 || n > 1<<20 || strconv.Itoa(n) != db {
				return URL{}, fmt.Errorf("database %q is not a small number", db)
			}
			u.DB = n
		}
	case u.isRedis():
		if path != "" {
			db, err := strconv.Atoi(path)
			if err != nil || db < 0 || db > 1<<20 || strconv.Itoa(db) != path {
				return URL{}, fmt.Errorf("database %q is not a small number", path)
			}
			u.DB = db
		}
	default:
		if path != "" {
			return URL{}, fmt.Errorf("%s:// takes no path", u.Scheme)
		}
	}
	return u, nil
}

func (u *URL) isRedis() bool {
	return u.Scheme == Redis || u.Scheme == RedisTLS || u.Scheme == Redlock || u.IsSentinel() || u.IsRedisCluster()
}

// IsRedisCluster reports whether the store is a Redis Cluster
// (redis-cluster or rediss-cluster).
func (u URL) IsRedisCluster() bool { return u.Scheme == RedisCluster || u.Scheme == RedisClusterTLS }

// OneRedisMaster reports whether the store is one Redis master: redis://,
// rediss://, or a Sentinel-managed one (whose replicas WithReplicas can
// wait for).
func (u URL) OneRedisMaster() bool {
	return u.Scheme == Redis || u.Scheme == RedisTLS || u.IsSentinel()
}

// IsSentinel reports whether the store is a Sentinel-managed Redis master
// (redis-sentinel or rediss-sentinel).
func (u URL) IsSentinel() bool { return u.Scheme == RedisSentinel || u.Scheme == RedisSentinelTLS }

// setSentinelQuery reads a redis-sentinel:// URL's query: the sentinels'
// credentials, nothing else.
func (u *URL) setSentinelQuery(query string) error {
	if query == "" {
		return nil
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return errors.New("bad query")
	}
	for k, v := range q {
		if len(v) != 1 {
			return fmt.Errorf("query option %s given %d times", k, len(v))
		}
		switch k {
		case "sentinel_user":
			u.SentinelUser = v[0]
		case "sentinel_password":
			u.SentinelPassword = v[0]
		default:
			return fmt.Errorf("unknown query option %q (want sentinel_user, sentinel_password)", k)
		}
	}
	return nil
}

// LockName is a lock's name as the store names it (baton.CleanName's
// rule): on ZooKeeper, which needs absolute paths, with a leading "/"; on
// the other stores as written. Two names are one lock when their
// LockNames are equal.
func (u URL) LockName(name string) string {
	if u.IsZooKeeper() {
		return backend.AbsolutePath(name)
	}
	return name
}

// Layout is the layout reader's name for a store with sessions
// (layout.StoreZooKeeper, layout.StoreEtcd, else layout.StoreMemory).
func (u URL) Layout() string {
	switch {
	case u.IsZooKeeper():
		return layout.StoreZooKeeper
	case u.IsEtcd():
		return layout.StoreEtcd
	}
	return layout.StoreMemory
}

// Fenced reports whether the store's locks grant fencing tokens: every
// kind's but Redlock's (a Redlock master's K:token counts a
// single-server Mutex's grants on that key, not a Redlock holder's).
func (u URL) Fenced() bool { return u.Scheme != Redlock }

// Majority is how many of the store's servers a lock must hold: a
// majority of a redlock:// URL's masters, else 1.
func (u URL) Majority() int {
	if u.Scheme == Redlock {
		return len(u.Hosts)/2 + 1
	}
	return 1
}

// IsZooKeeper reports whether the store is ZooKeeper (zk or zks).
func (u URL) IsZooKeeper() bool { return u.Scheme == ZooKeeper || u.Scheme == ZooKeeperTLS }

// ShortestZooKeeperTTL is the shortest session a ZooKeeper server with its
// default tickTime (2000 ms) grants: it refuses shorter ones.
const ShortestZooKeeperTTL = 4 * time.Second

// ShortTTL is d, or the shortest session TTL the store's servers grant with
// their default settings if that is longer (ShortestZooKeeperTTL).
func (u URL) ShortTTL(d time.Duration) time.Duration {
	if u.IsZooKeeper() {
		return max(d, ShortestZooKeeperTTL)
	}
	return d
}

// RootPrefix is the prefix that names every lock of the store: "/" on
// ZooKeeper, whose paths are absolute, and "" (every key) elsewhere.
func (u URL) RootPrefix() string {
	if u.IsZooKeeper() {
		return "/"
	}
	return ""
}

// IsEtcd reports whether the store is etcd (etcd or etcds).
func (u URL) IsEtcd() bool { return u.Scheme == Etcd || u.Scheme == EtcdTLS }

func (u *URL) setUser(info string) error {
	user, pass, hasPass := strings.Cut(info, ":")
	var err error
	if u.User, err = url.PathUnescape(user); err != nil {
		return errors.New("bad escape in user name")
	}
	if hasPass {
		if u.Password, err = url.PathUnescape(pass); err != nil {
			return errors.New("bad escape in password")
		}
	}
	return nil
}

// hostPort checks one host[:port] and fills in the default port.
func hostPort(h, port string) (string, error) {
	if h == "" {
		return "", errors.New("empty host in list")
	}
	host, p := h, port
	if strings.HasPrefix(h, "[") || strings.Count(h, ":") == 1 {
		var err error
		if strings.HasPrefix(h, "[") && !strings.Contains(h, "]:") {
			h += ":" + port
		}
		if host, p, err = net.SplitHostPort(h); err != nil {
			return "", fmt.Errorf("host %q: want HOST:PORT", h)
		}
	} else if strings.Contains(h, ":") {
		return "", fmt.Errorf("host %q: put IPv6 addresses in brackets", h)
	}
	if host == "" || strings.ContainsAny(host, " \t\r\n[]@/\\%") {
		return "", fmt.Errorf("host %q is not a host name or address", h)
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != p {
		return "", fmt.Errorf("port %q is not a port number", p)
	}
	return net.JoinHostPort(host, p), nil
}

// chroot checks a ZooKeeper chroot path; "/" means none.
func chroot(p string) (string, error) {
	if p == "/" {
		return "", nil
	}
	if strings.HasSuffix(p, "/") {
		return "", fmt.Errorf("chroot %q ends with /", p)
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", fmt.Errorf("chroot %q has an empty, . or .. element", p)
		}
		for _, r := range seg {
			if r < 0x20 || r == 0x7f {
				return "", fmt.Errorf("chroot %q has a control character", p)
			}
		}
	}
	return p, nil
}

// String is the URL in canonical form with any password redacted: safe to
// print.
func (u URL) String() string { return u.format(true) }

// Unredacted is the URL in canonical form with its password: for handing
// the store to a child process through its environment, never for
// printing.
func (u URL) Unredacted() string { return u.format(false) }

func (u URL) format(redact bool) string {
	if u.Scheme == Postgres {
		return u.formatPostgres(redact)
	}
	var b strings.Builder
	b.WriteString(u.Scheme)
	b.WriteString("://")
	if u.User != "" || u.Password != "" {
		b.WriteString(url.PathEscape(u.User))
		if u.Password != "" {
			b.WriteByte(':')
			if redact {
				b.WriteString("xxxxx")
			} else {
				b.WriteString(url.PathEscape(u.Password))
			}
		}
		b.WriteByte('@')
	}
	b.WriteString(strings.Join(u.Hosts, ","))
	switch {
	case u.Chroot != "":
		b.WriteString(u.Chroot)
	case u.Master != "":
		b.WriteString("/" + u.Master)
		if u.DB != 0 {
			b.WriteString("/" + strconv.Itoa(u.DB))
		}
	case u.DB != 0:
		b.WriteString("/" + strconv.Itoa(u.DB))
	}
	q := url.Values{}
	if u.SentinelUser != "" {
		q.Set("sentinel_user", u.SentinelUser)
	}
	if u.SentinelPassword != "" {
		q.Set("sentinel_password", u.SentinelPassword)
		if redact {
			q.Set("sentinel_password", "xxxxx")
		}
	}
	if len(q) > 0 {
		b.WriteString("?" + q.Encode())
	}
	return b.String()
}
