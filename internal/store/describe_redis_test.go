package store

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestDescribeRedisTokens: on redlock:// a holder's rows show no fencing
// token (Redlock grants none; BATON_TOKEN is 0), even where a server's
// K:token counts a single-server Mutex's earlier grants on the key; on
// redis:// the token is the holder's. A free lock's --json lists its
// recipes and nodes as [], not null.
func TestDescribeRedisTokens(t *testing.T) {
	now := time.Now()
	locks := []RedisLock{
		{Server: "127.0.0.1:7001", Holder: "0123456789abcdef0123456789abcdef", Left: 5 * time.Second, Token: 1795531876415676},
		{Server: "127.0.0.1:7002", Holder: "0123456789abcdef0123456789abcdef", Left: 5 * time.Second},
		{Server: "127.0.0.1:7003", Holder: "0123456789abcdef0123456789abcdef", Left: 5 * time.Second},
	}
	for _, tc := range []struct {
		url   string
		locks []RedisLock
		want  int64 // the first row's token
	}{
		{"redlock://127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003", locks, 0},
		{"redis://127.0.0.1:7001", locks[:1], 1795531876415676},
	} {
		u, err := Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		rep := DescribeRedis("/r", u, tc.locks, now)
		if rep.Holders != 1 || len(rep.Entries) != len(tc.locks) {
			t.Fatalf("%s: %d holders, %d rows; want 1 and %d", tc.url, rep.Holders, len(rep.Entries), len(tc.locks))
		}
		for i, e := range rep.Entries {
			want := tc.want
			if i > 0 {
				want = 0 // the other servers counted no grant
			}
			if e.Token != want {
				t.Errorf("%s: row %d (%s) token %d, want %d", tc.url, i+1, e.Node, e.Token, want)
			}
		}
	}
	u, err := Parse("redis://127.0.0.1:7001")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(DescribeRedis("/r", u, []RedisLock{{Server: "127.0.0.1:7001"}}, now))
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.Contains(s, `"recipes":[]`) || !strings.Contains(s, `"nodes":[]`) {
		t.Errorf("a free Redis lock's report: %s; want \"recipes\":[] and \"nodes\":[]", s)
	}
}
