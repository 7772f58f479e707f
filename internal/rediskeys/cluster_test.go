package rediskeys

import "testing"

func TestSlotKnownValues(t *testing.T) {
	// Values from the Redis Cluster specification and CLUSTER KEYSLOT.
	for key, want := range map[string]int{
		"123456789":            12739,
		"foo":                  12182,
		"{user1000}.following": Slot("user1000"),
		"foo{}{bar}":           Slot("foo{}{bar}"),
		"foo{{bar}}zap":        Slot("{bar"),
		"foo{bar}{zap}":        Slot("bar"),
	} {
		if got := Slot(key); got != want {
			t.Errorf("Slot(%q) = %d, want %d", key, got, want)
		}
	}
	if crc16("123456789") != 0x31C3 {
		t.Errorf("crc16(123456789) = %#x, want 0x31c3", crc16("123456789"))
	}
}

func TestTagCoversEverySlot(t *testing.T) {
	for s := range Slots {
		tag := Tag(s)
		if tag == "" || Slot(tag) != s || Slot("{"+tag+"}x") != s {
			t.Fatalf("Tag(%d) = %q, in slot %d", s, tag, Slot(tag))
		}
	}
}

func TestClusterKeysShareTheNamesSlot(t *testing.T) {
	names := []string{"x", "/x", "a/b", "jobs/x", "a{b}", "{b}a", "a{}b", "a}b", "a{b", "{", "}{x}", "{{}}"}
	seen := map[string]string{}
	for _, n := range names {
		tok, q := ClusterKeys(n)
		for _, k := range []string{tok, q} {
			if Slot(k) != Slot(n) {
				t.Errorf("%q: key %q in slot %d, the name in %d", n, k, Slot(k), Slot(n))
			}
			if got, ok := ClusterName(k); !ok || got != n {
				t.Errorf("ClusterName(%q) = %q, %v, want %q", k, got, ok, n)
			}
			if other, ok := seen[k]; ok {
				t.Errorf("%q and %q share key %q", n, other, k)
			}
			seen[k] = n
		}
	}
	if tok, q := ClusterKeys("jobs/x"); tok != "{jobs/x}:token" || q != "{jobs/x}:queue" {
		t.Errorf("ClusterKeys(jobs/x) = %q, %q", tok, q)
	}
}

func TestClusterNameRefusesOtherKeys(t *testing.T) {
	for _, k := range []string{"x", "x:token", "{x}", "{x}:lock", "{}:token", "{0}x{:token", "{x}y:queue"} {
		if n, ok := ClusterName(k); ok {
			t.Errorf("ClusterName(%q) = %q, want none", k, n)
		}
	}
}
