package store

import "testing"

// TestRedisTLSServerName: a store of one Redis server checks its
// certificate against the URL's host; on rediss-sentinel:// and
// rediss-cluster:// the first host is one of many (a sentinel, a seed
// node), so each connection is checked against the host it dials.
func TestRedisTLSServerName(t *testing.T) {
	for raw, want := range map[string]string{
		"rediss://db.example:6379":                             "db.example",
		"rediss-sentinel://s1.example:26379,s2.example/master": "",
		"rediss-cluster://n1.example:7000,n2.example:7001":     "",
	} {
		u, err := Parse(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		cfg, err := u.redisTLS(TLSFiles{})
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if cfg.ServerName != want {
			t.Errorf("%s: TLS ServerName %q, want %q", raw, cfg.ServerName, want)
		}
	}
}
