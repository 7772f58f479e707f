package store

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"github.com/batonhq/baton/postgres"
)

// parsePostgres parses postgres://[user[:pass]@]h[:p][,h[:p]…][/db][?params]
// (or postgresql://): the hosts and ports are checked here, libpq's
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
	if authority == "" {
		return URL{}, errors.New("no host")
	}
	var err error
	if u.Database, err = url.PathUnescape(db); err != nil {
		return URL{}, errors.New("bad escape in database name")
	}
	for _, h := range strings.Split(authority, ",") {
		hp, err := hostPort(h, "5432")
		if err != nil {
			return URL{}, err
		}
		u.Hosts = append(u.Hosts, hp)
	}
	return u, nil
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
