package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/batonhq/baton/postgres"
)

// parsePostgres parses postgres://[user[:pass]@]h[:p][,h[:p]…][/db][?params]
// (or postgresql://; h may be a unix socket's directory, %2F-encoded, and
// the hosts may be left out for libpq's default): the hosts and ports are
// checked here, libpq's
// parameters (sslmode, sslrootcert, …) and baton's schema= are kept for
// pgx, which reads them when the store is opened.
func parsePostgres(raw string) (URL, error) {
	_, rest, _ := strings.Cut(raw, "://")
	u := URL{Scheme: Postgres}
	rest, frag, _ := strings.Cut(rest, "#")
	if frag != "" {
		return URL{}, errors.New("fragment is not supported")
	}
	rest, u.Query, _ = strings.Cut(rest, "?")
	if _, err := url.ParseQuery(u.Query); err != nil {
		return URL{}, errors.New("bad query")
	}
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		if err := u.setUser(rest[:i]); err != nil {
			return URL{}, err
		}
		rest = rest[i+1:]
	}
	authority, db, _ := strings.Cut(rest, "/")
	var err error
	if u.Database, err = url.PathUnescape(db); err != nil {
		return URL{}, errors.New("bad escape in database name")
	}
	if authority == "" {
		// libpq's default: the host= parameter, $PGHOST, or the unix
		// socket in its usual directory.
		return u, nil
	}
	for _, h := range strings.Split(authority, ",") {
		hp, err := pgHost(h)
		if err != nil {
			return URL{}, err
		}
		u.Hosts = append(u.Hosts, hp)
	}
	return u, nil
}

// pgHost checks one host of a postgres:// URL: a name or address with a
// port (5432 if none), or, as libpq writes it, the directory of a unix
// socket percent-encoded (%2Fvar%2Frun%2Fpostgresql, with or without
// :PORT), which is kept as written.
func pgHost(h string) (string, error) {
	if !strings.HasPrefix(strings.ToLower(h), "%2f") {
		return hostPort(h, "5432")
	}
	dir, port := h, ""
	if i := strings.LastIndex(h, ":"); i >= 0 {
		dir, port = h[:i], h[i+1:]
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			return "", fmt.Errorf("port %q is not a port number", port)
		}
	}
	d, err := url.PathUnescape(dir)
	if err != nil || strings.ContainsAny(d, ",\x00\n\r") {
		return "", fmt.Errorf("socket directory %q is not a percent-encoded path", dir)
	}
	return h, nil
}

func (u URL) formatPostgres(redact bool) string {
	var b strings.Builder
	b.WriteString("postgres://")
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
	if u.Database != "" {
		b.WriteString("/" + url.PathEscape(u.Database))
	}
	if u.Query != "" {
		b.WriteString("?" + u.Query)
	}
	return b.String()
}

// openPostgres opens a session on the database (making baton's schema on
// first use). TLS is libpq's: sslmode, sslrootcert, sslcert and sslkey in
// the URL.
func openPostgres(ctx context.Context, u URL, o Options) (*Store, error) {
	s, err := postgres.Open(ctx, u.Unredacted(), postgres.WithTTL(o.TTL), postgres.WithTelemetry(o.Telemetry))
	if err != nil {
		return nil, err
	}
	return newSessionStore(u, s), nil
}
