package store

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/redact"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want URL
		str  string
	}{
		{"", URL{Scheme: Etcd, Hosts: []string{"127.0.0.1:2379"}}, "etcd://127.0.0.1:2379"},
		{"etcd://a:1,b", URL{Scheme: Etcd, Hosts: []string{"a:1", "b:2379"}}, "etcd://a:1,b:2379"},
		{"ETCD://[::1]:23", URL{Scheme: Etcd, Hosts: []string{"[::1]:23"}}, "etcd://[::1]:23"},
		{"etcd://[::1]", URL{Scheme: Etcd, Hosts: []string{"[::1]:2379"}}, "etcd://[::1]:2379"},
		{"zk://h1:2181,h2:2182/app/locks", URL{Scheme: ZooKeeper, Hosts: []string{"h1:2181", "h2:2182"}, Chroot: "/app/locks"}, "zk://h1:2181,h2:2182/app/locks"},
		{"zk://h/", URL{Scheme: ZooKeeper, Hosts: []string{"h:2181"}}, "zk://h:2181"},
		{"redis://u:p%40ss@r:6380/3", URL{Scheme: Redis, Hosts: []string{"r:6380"}, User: "u", Password: "p@ss", DB: 3}, "redis://u:xxxxx@r:6380/3"},
		{"redis://:s3cret@r", URL{Scheme: Redis, Hosts: []string{"r:6379"}, Password: "s3cret"}, "redis://:xxxxx@r:6379"},
		{"redis://:a/b@c@r", URL{Scheme: Redis, Hosts: []string{"r:6379"}, Password: "a/b@c"}, "redis://:xxxxx@r:6379"},
		{"rediss://r:1", URL{Scheme: RedisTLS, TLS: true, Hosts: []string{"r:1"}}, "rediss://r:1"},
		{"zks://h1,h2:3/app", URL{Scheme: ZooKeeperTLS, TLS: true, Hosts: []string{"h1:2281", "h2:3"}, Chroot: "/app"}, "zks://h1:2281,h2:3/app"},
		{"zk://alice:s3cret@h/app", URL{Scheme: ZooKeeper, Hosts: []string{"h:2181"}, User: "alice", Password: "s3cret", Chroot: "/app"}, "zk://alice:xxxxx@h:2181/app"},
		{"zks://alice:p%2Fw@h", URL{Scheme: ZooKeeperTLS, TLS: true, Hosts: []string{"h:2281"}, User: "alice", Password: "p/w"}, "zks://alice:xxxxx@h:2281"},
		{"etcd://root:pw@a,b:1", URL{Scheme: Etcd, Hosts: []string{"a:2379", "b:1"}, User: "root", Password: "pw"}, "etcd://root:xxxxx@a:2379,b:1"},
		{"etcds://127.0.0.1:4", URL{Scheme: EtcdTLS, TLS: true, Hosts: []string{"127.0.0.1:4"}}, "etcds://127.0.0.1:4"},
		{"ETCDS://root:a@b@[::1]", URL{Scheme: EtcdTLS, TLS: true, Hosts: []string{"[::1]:2379"}, User: "root", Password: "a@b"}, "etcds://root:xxxxx@[::1]:2379"},
		{"redlock://a:1,b:2,c:3", URL{Scheme: Redlock, Hosts: []string{"a:1", "b:2", "c:3"}}, "redlock://a:1,b:2,c:3"},
		{"redis-sentinel://a:1,b,c:3/mymaster", URL{Scheme: RedisSentinel, Hosts: []string{"a:1", "b:26379", "c:3"}, Master: "mymaster"}, "redis-sentinel://a:1,b:26379,c:3/mymaster"},
		{"rediss-sentinel://u:p@a/m/2?sentinel_password=s%26p&sentinel_user=sv", URL{Scheme: RedisSentinelTLS, TLS: true, Hosts: []string{"a:26379"}, User: "u", Password: "p", Master: "m", DB: 2, SentinelUser: "sv", SentinelPassword: "s&p"}, "rediss-sentinel://u:xxxxx@a:26379/m/2?sentinel_password=xxxxx&sentinel_user=sv"},
		{"redis-cluster://a:1,b,c:3", URL{Scheme: RedisCluster, Hosts: []string{"a:1", "b:6379", "c:3"}}, "redis-cluster://a:1,b:6379,c:3"},
		{"Rediss-Cluster://u:p@a:1/", URL{Scheme: RedisClusterTLS, TLS: true, Hosts: []string{"a:1"}, User: "u", Password: "p"}, "rediss-cluster://u:xxxxx@a:1"},
		{"postgres://u:p%40w@h/db?sslmode=disable&schema=s", URL{Scheme: Postgres, Hosts: []string{"h:5432"}, User: "u", Password: "p@w", Database: "db", Query: "sslmode=disable&schema=s"},
			"postgres://u:xxxxx@h:5432/db?sslmode=disable&schema=s"},
		{"postgresql://h1:5433,[::1]/db?target_session_attrs=read-write", URL{Scheme: Postgres, Hosts: []string{"h1:5433", "[::1]:5432"}, Database: "db", Query: "target_session_attrs=read-write"},
			"postgres://h1:5433,[::1]:5432/db?target_session_attrs=read-write"},
		// A unix socket's directory, as libpq takes it, and no host at
		// all (libpq's default, or host= in the query).
		{"postgresql://%2Fvar%2Frun%2Fpostgresql/db", URL{Scheme: Postgres, Hosts: []string{"%2Fvar%2Frun%2Fpostgresql"}, Database: "db"}, "postgres://%2Fvar%2Frun%2Fpostgresql/db"},
		{"postgres://app@%2ftmp:5433/db", URL{Scheme: Postgres, Hosts: []string{"%2ftmp:5433"}, User: "app", Database: "db"}, "postgres://app@%2ftmp:5433/db"},
		{"postgres:///db?host=/tmp&port=5433", URL{Scheme: Postgres, Database: "db", Query: "host=/tmp&port=5433"}, "postgres:///db?host=/tmp&port=5433"},
	} {
		got, err := Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Parse(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
		if got.String() != tc.str {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.in, got.String(), tc.str)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{
		"127.0.0.1:2379", "http://h:1", "etcd://", "etcd://h:0", "etcd://h:70000", "etcd://h:x",
		"etcd://h:1,", "etcd://h/prefix", "etcd://::1", "zk://h/a//b", "zk://h/a/", "zk://h/a/../b",
		"redis://a,b", "redis://h/x", "redis://h/01", "etcd://h?x=1", "memory://",
		"etcd://h:+1", "redis://:pw%zz@h", "etcd://u@h", "etcd://:pw@h", "zk://u:@h", "zks://:p@h",
		"etcds://h/x", "zks://h/a/./b", "zks://", "etcds://u:p@", "zk://h/a@b", "https://h",
		"redis-sentinel://a,b", "redis-sentinel://a/", "redis-sentinel://a/m/x", "redis-sentinel://a/m?password=x",
		"redis-sentinel://a/m?sentinel_user=a&sentinel_user=b", "redis-sentinel://a/m#f", "redis-sentinel://a/m%20x",
		"redis-cluster://h/1", "redis-cluster://", "redis-cluster://a,a", "rediss-cluster://h?x=1",
		"postgres://h:0/db", "postgres://%2Ftmp:x/db", "postgres://%2Ftmp%zz/db", "postgres://h,/db", "postgres://h/db#f",
	} {
		if u, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = %+v, want an error", in, u)
		} else if !errors.Is(err, ErrBadURL) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Parse(%q): %q is not one ErrBadURL line", in, err)
		}
	}
}

func TestParseErrorRedacts(t *testing.T) {
	for _, raw := range []string{
		"redis://user:hunter2@host:badport", "zk://u:hunter2@h:1/a//b", "zks://u:hunter2@h:x",
		"etcd://u:hunter2@h/path", "etcds://u:hunter2@h,", "etcd://:hunter2@h", "bogus://u:hunter2@h",
	} {
		_, err := Parse(raw)
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Parse(%q): error %v shows the password", raw, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "etcd://a:1,b", "zk://h1,h2:2182/x/y", "redis://u:p@h:1/2", "rediss://:p%2F@h",
		"redlock://a,b,c", "etcd://[::1]:1", "zk://h/", "redis://:a@b@c", "zks://u:p@h1,h2/x",
		"etcds://root:p%40w@[::1]", "etcd://u:pw@h", "zk://u:p:q@h",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := Parse(raw)
		if err != nil {
			if strings.Contains(err.Error(), "\n") && !strings.Contains(raw, "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		// The canonical form parses back to the same URL.
		again, err := Parse(u.format(false))
		if err != nil {
			t.Fatalf("Parse(%q) ok, but its canonical form %q fails: %v", raw, u.format(false), err)
		}
		if !reflect.DeepEqual(u, again) {
			t.Fatalf("round trip %q: %+v != %+v", raw, u, again)
		}
		// The printable form does not depend on the password.
		if u.Password != "" {
			other := u
			other.Password = "a different password"
			if u.String() != other.String() {
				t.Fatalf("String() %q depends on the password", u.String())
			}
			if n := strings.Count(raw, u.Password); n > 0 && strings.Count(redact.URL(raw), u.Password) >= n {
				t.Fatalf("redact.URL(%q) = %q shows the password", raw, redact.URL(raw))
			}
		}
		if u.TLS != (u.Scheme == ZooKeeperTLS || u.Scheme == EtcdTLS || u.Scheme == RedisTLS) {
			t.Fatalf("%q: TLS %v for scheme %s", raw, u.TLS, u.Scheme)
		}
		if len(u.Hosts) == 0 && u.Scheme != Postgres { // postgres:///db: libpq's default host
			t.Fatalf("%q parsed with no hosts", raw)
		}
	})
}
