package store

import (
	"errors"
	"reflect"
	"strings"
	"testing"
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
		{"rediss://r:1", URL{Scheme: RedisTLS, Hosts: []string{"r:1"}}, "rediss://r:1"},
		{"redlock://a:1,b:2,c:3", URL{Scheme: Redlock, Hosts: []string{"a:1", "b:2", "c:3"}}, "redlock://a:1,b:2,c:3"},
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
		"redis://a,b", "redis://h/x", "redis://h/01", "etcd://u:p@h", "etcd://h?x=1", "memory://",
		"etcd://h:+1", "redis://:pw%zz@h",
	} {
		if u, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = %+v, want an error", in, u)
		} else if !errors.Is(err, ErrBadURL) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Parse(%q): %q is not one ErrBadURL line", in, err)
		}
	}
}

func TestParseErrorRedacts(t *testing.T) {
	_, err := Parse("redis://user:hunter2@host:badport")
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error %v shows the password", err)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"redis://u:pw@h:1/2":  "redis://u:xxxxx@h:1/2",
		"redis://:p/w@x@h":    "redis://:xxxxx@h",
		"redis://user@h":      "redis://user@h",
		"etcd://h:1":          "etcd://h:1",
		"not a url u:pw@host": "not a url u:pw@host",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "etcd://a:1,b", "zk://h1,h2:2182/x/y", "redis://u:p@h:1/2", "rediss://:p%2F@h",
		"redlock://a,b,c", "etcd://[::1]:1", "zk://h/", "redis://:a@b@c",
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
		}
		if len(u.Hosts) == 0 {
			t.Fatalf("%q parsed with no hosts", raw)
		}
	})
}
