package redis

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

// The URL schemes of a Redis Cluster.
const (
	clusterScheme    = "redis-cluster"
	clusterTLSScheme = "rediss-cluster"
)

// clusterRedirects is how many times a command follows MOVED or ASK, or
// is retried after its node failed, unless the URL's max_redirects says
// otherwise: with go-redis's backoff (8 ms doubling to 512 ms) about 5 s,
// which bridges a master's failover to its replica (a cluster-node-timeout
// and an election). A lock script run twice is safe: see the package doc.
const clusterRedirects = 14

func isClusterURL(raw string) bool {
	return strings.HasPrefix(raw, clusterScheme+"://") || strings.HasPrefix(raw, clusterTLSScheme+"://")
}

// parseClusterURL reads redis-cluster://[user:pass@]h:p,h:p,…[?options]
// (rediss-cluster:// for TLS) into go-redis's cluster options: the hosts
// are the seed nodes, the query options are go-redis's ParseClusterURL's
// plus ca_file.
func parseClusterURL(raw string) (*goredis.ClusterOptions, error) {
	safe := Redact(raw)
	scheme, rest, _ := strings.Cut(raw, "://")
	u, err := url.Parse("redis://" + rest)
	if err != nil {
		return nil, fmt.Errorf("redis: bad URL %s: %s", safe, scrub(err.Error(), raw))
	}
	if u.Path != "" && u.Path != "/" {
		return nil, fmt.Errorf("redis: bad URL %s: a cluster has no database number", safe)
	}
	hosts := strings.Split(u.Host, ",")
	for _, h := range hosts {
		if h == "" {
			return nil, fmt.Errorf("redis: bad URL %s: an empty host", safe)
		}
	}
	q := u.Query()
	caFile := q.Get("ca_file")
	q.Del("ca_file")
	for _, h := range hosts[1:] {
		q.Add("addr", h)
	}
	u.Host, u.Path, u.RawQuery = hosts[0], "", q.Encode()
	if scheme == clusterTLSScheme {
		u.Scheme = "rediss"
	}
	opt, err := goredis.ParseClusterURL(u.String())
	if err != nil {
		return nil, fmt.Errorf("redis: bad URL %s: %s", safe, scrub(err.Error(), u.String()))
	}
	if opt.TLSConfig != nil {
		// go-redis names the first seed node as the ServerName of every
		// connection, to every node; left empty, crypto/tls checks each
		// certificate against the host that connection dials.
		opt.TLSConfig.ServerName = ""
	}
	if caFile != "" {
		if opt.TLSConfig == nil {
			return nil, fmt.Errorf("redis: bad URL %s: ca_file needs a rediss-cluster:// URL", safe)
		}
		pool, err := readCAs(caFile, safe)
		if err != nil {
			return nil, err
		}
		opt.TLSConfig.RootCAs = pool
	}
	opt.ContextTimeoutEnabled = true
	opt.MaxRetries = -1 // per node; the cluster client retries across nodes
	if !q.Has("max_redirects") {
		opt.MaxRedirects = clusterRedirects
	}
	return opt, nil
}

// dialCluster is Dial for a redis-cluster:// URL: it reads the cluster's
// slot map from its nodes and checks the connection and credentials with
// a PING of every master.
func dialCluster(ctx context.Context, raw string, opts []DialOption) (*Client, error) {
	safe := Redact(raw)
	opt, err := parseClusterURL(raw)
	if err != nil {
		return nil, err
	}
	var d dialConfig
	for _, f := range opts {
		f(&d)
	}
	if d.tls != nil {
		if opt.TLSConfig == nil {
			return nil, fmt.Errorf("redis: %s: a TLS configuration needs a rediss-cluster:// URL", safe)
		}
		opt.TLSConfig = d.tls
	}
	rc := goredis.NewClusterClient(opt)
	c := NewClient(rc)
	err = rc.ForEachMaster(ctx, func(ctx context.Context, m *goredis.Client) error {
		return m.Ping(ctx).Err()
	})
	if err != nil {
		_ = rc.Close()
		return nil, connectError(err, safe, opt.Username, opt.Password)
	}
	c.own, c.url = true, safe
	return c, nil
}
