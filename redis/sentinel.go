package redis

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/redact"
)

// Sentinel URL schemes: a master managed by Redis Sentinel, named by its
// sentinels and its master name, over TCP or TLS.
const (
	SentinelScheme    = "redis-sentinel"
	SentinelTLSScheme = "rediss-sentinel"
)

// ErrNoMaster is wrapped by Dial's error when no sentinel of a
// redis-sentinel:// URL knows its master name (or none answered).
var ErrNoMaster = errors.New("redis: no sentinel knows the master")

// isSentinelURL reports whether raw is a redis-sentinel:// or
// rediss-sentinel:// URL.
func isSentinelURL(raw string) bool {
	scheme, _, _ := strings.Cut(raw, "://")
	scheme = strings.ToLower(scheme)
	return scheme == SentinelScheme || scheme == SentinelTLSScheme
}

// parseSentinelURL parses
//
//	redis-sentinel://[user:pass@]h:p[,h:p…]/MASTERNAME[/db][?query]
//
// (rediss-sentinel:// for TLS, to the sentinels and the master alike).
// user:pass authenticate to the master (and its replicas); the sentinels'
// own credentials, when they need any, are the query's sentinel_user and
// sentinel_password. The other query options are go-redis's failover
// options (dial_timeout, …), plus ca_file as for Dial.
func parseSentinelURL(raw string) (*goredis.FailoverOptions, string, error) {
	safe := Redact(raw)
	bad := func(format string, a ...any) error {
		return fmt.Errorf("redis: bad URL %s: %s", safe, fmt.Sprintf(format, a...))
	}
	scheme, rest, _ := strings.Cut(raw, "://")
	tlsOn := strings.EqualFold(scheme, SentinelTLSScheme)
	rest, rawQuery, _ := strings.Cut(rest, "?")
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, "", bad("bad query")
	}
	sUser, sPass, caFile := q.Get("sentinel_user"), q.Get("sentinel_password"), q.Get("ca_file")
	safe = redact.Secrets(safe, sPass, url.QueryEscape(sPass))
	var user, pass string
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		u, p, _ := strings.Cut(rest[:i], ":")
		var err error
		if user, err = url.PathUnescape(u); err != nil {
			return nil, "", bad("bad escape in user name")
		}
		if pass, err = url.PathUnescape(p); err != nil {
			return nil, "", bad("bad escape in password")
		}
		rest = rest[i+1:]
	}
	hosts, path, _ := strings.Cut(rest, "/")
	master, db, _ := strings.Cut(path, "/")
	if hosts == "" {
		return nil, "", bad("no sentinel host")
	}
	if master == "" {
		return nil, "", bad("no master name: want %s://HOST:PORT[,HOST:PORT…]/MASTERNAME", SentinelScheme)
	}
	name, err := url.PathUnescape(master)
	if err != nil || strings.ContainsAny(name, " \t\r\n") {
		return nil, "", bad("master name %q is not a name", master)
	}
	master = name
	for _, k := range []string{"sentinel_user", "sentinel_password", "ca_file", "master_name", "addr", "username", "password", "db"} {
		if k != "sentinel_user" && k != "sentinel_password" && k != "ca_file" && q.Has(k) {
			return nil, "", bad("%s is set by the URL's path and user, not its query", k)
		}
		q.Del(k)
	}
	var addrs []string
	for _, h := range strings.Split(hosts, ",") {
		if _, _, err := net.SplitHostPort(h); err != nil {
			if strings.Contains(h, ":") && !strings.HasPrefix(h, "[") {
				return nil, "", bad("sentinel %q: want HOST:PORT", h)
			}
			h = net.JoinHostPort(strings.Trim(h, "[]"), "26379")
		}
		addrs = append(addrs, h)
	}
	// go-redis parses the remaining options.
	base := "redis://" + addrs[0]
	if tlsOn {
		base = "rediss://" + addrs[0]
	}
	opt, err := goredis.ParseFailoverURL(base + "?" + q.Encode())
	if err != nil {
		return nil, "", bad("%s", scrub(err.Error(), raw))
	}
	if opt.TLSConfig != nil {
		// go-redis names the first sentinel as the ServerName of every
		// connection, the master's too; left empty, crypto/tls checks each
		// certificate against the host that connection dials.
		opt.TLSConfig.ServerName = ""
	}
	opt.SentinelAddrs = addrs
	opt.MasterName = master
	opt.Username, opt.Password = user, pass
	opt.SentinelUsername, opt.SentinelPassword = sUser, sPass
	if db != "" {
		if opt.DB, err = strconv.Atoi(db); err != nil || opt.DB < 0 {
			return nil, "", bad("database %q is not a number", db)
		}
	}
	if caFile != "" {
		if opt.TLSConfig == nil {
			return nil, "", bad("ca_file needs a %s:// URL", SentinelTLSScheme)
		}
		pool, err := readCAs(caFile, safe)
		if err != nil {
			return nil, "", err
		}
		opt.TLSConfig.RootCAs = pool
	}
	opt.ContextTimeoutEnabled = true
	opt.MaxRetries = -1 // lock scripts are retried here, knowing what a retry means
	if opt.DialerRetries <= 0 {
		opt.DialerRetries = 1
	}
	return opt, safe, nil
}

// FailoverOptions returns go-redis's options for a redis-sentinel:// or
// rediss-sentinel:// URL as Dial reads it (see Dial), for a client of
// one's own (goredis.NewFailoverClient). It does no I/O.
func FailoverOptions(rawURL string) (*goredis.FailoverOptions, error) {
	if !isSentinelURL(rawURL) {
		return nil, fmt.Errorf("redis: %s is not a %s:// URL", Redact(rawURL), SentinelScheme)
	}
	opt, _, err := parseSentinelURL(rawURL)
	return opt, err
}

// dialSentinel is Dial for a redis-sentinel:// URL.
func dialSentinel(ctx context.Context, rawURL string, tlsCfg *tls.Config) (*Client, error) {
	opt, safe, err := parseSentinelURL(rawURL)
	if err != nil {
		return nil, err
	}
	if tlsCfg != nil {
		if opt.TLSConfig == nil {
			return nil, fmt.Errorf("redis: %s: a TLS configuration needs a %s:// URL", safe, SentinelTLSScheme)
		}
		opt.TLSConfig = tlsCfg
	}
	// Ask the sentinels first, so that a master name they do not know, or
	// sentinels that do not answer, say so (go-redis's own error names
	// neither).
	if err := findMaster(ctx, opt, safe); err != nil {
		return nil, err
	}
	rc := goredis.NewFailoverClient(opt)
	c := NewClient(rc)
	if err := rc.Ping(ctx).Err(); err != nil {
		_ = rc.Close()
		who := ""
		if opt.Username != "" {
			who = " as user " + opt.Username
		}
		err = redact.Error(err, opt.Password, opt.SentinelPassword)
		if IsAuthError(err) {
			return nil, fmt.Errorf("redis: authentication to master %s of %s%s failed (check the URL's user and password): %w: %w", opt.MasterName, safe, who, baton.ErrPermission, err)
		}
		return nil, fmt.Errorf("redis: connect to master %s of %s%s: %w", opt.MasterName, safe, who, err)
	}
	c.own, c.url = true, safe
	return c, nil
}

// findMaster asks each sentinel in turn for the master's address, and
// says why none gave it.
func findMaster(ctx context.Context, opt *goredis.FailoverOptions, safe string) error {
	var errs []error
	for _, addr := range opt.SentinelAddrs {
		sc := goredis.NewSentinelClient(&goredis.Options{
			Addr: addr, Username: opt.SentinelUsername, Password: opt.SentinelPassword,
			TLSConfig: opt.TLSConfig, DialTimeout: opt.DialTimeout, MaxRetries: -1,
			ContextTimeoutEnabled: true, Protocol: 2,
		})
		a, err := sc.GetMasterAddrByName(ctx, opt.MasterName).Result()
		_ = sc.Close()
		switch {
		case err == nil && len(a) == 2:
			return nil
		case errors.Is(err, goredis.Nil):
			errs = append(errs, fmt.Errorf("sentinel %s does not know master %q", addr, opt.MasterName))
		case err != nil && IsAuthError(err):
			return fmt.Errorf("redis: authentication to sentinel %s of %s failed (check sentinel_user and sentinel_password): %w: %w",
				addr, safe, baton.ErrPermission, redact.Error(err, opt.SentinelPassword))
		case err != nil:
			errs = append(errs, fmt.Errorf("sentinel %s: %w", addr, redact.Error(err, opt.SentinelPassword)))
		}
		if ctx.Err() != nil {
			break
		}
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return fmt.Errorf("%w %q: %s: %s", ErrNoMaster, opt.MasterName, safe, strings.Join(msgs, "; "))
}
