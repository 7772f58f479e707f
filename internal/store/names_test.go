package store

import (
	"errors"
	"testing"

	"github.com/batonhq/baton"
)

func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		url, name string
		ok        bool
	}{
		{"etcd://h", "/locks/a", true}, {"etcd://h", "a/../b", false}, {"etcds://h", "./a", false}, {"etcd://h", "/", false},
		{"redis://h", "build", true}, {"rediss://h", "build:token", false}, {"redlock://a,b,c", "x:queue", false}, {"redis://h", "a\x00", false},
		{"zk://h", "/a", true}, {"zks://h", "a", false}, {"zk://h", "/a//b", false},
	} {
		u, err := Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if err := u.CheckName(tc.name); (err == nil) != tc.ok || (err != nil && !errors.Is(err, baton.ErrInvalidName)) {
			t.Errorf("%s CheckName(%q) = %v, want ok %v", tc.url, tc.name, err, tc.ok)
		}
	}
}
