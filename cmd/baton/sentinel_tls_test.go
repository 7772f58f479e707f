package main

import (
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/redistest"
)

// TestSentinelTLS runs `baton lock` and `baton status` on a
// rediss-sentinel:// store with --tls-ca ($BATON_TLS_CA): the URL names
// the sentinels as localhost, and the master's certificate names only
// 127.0.0.1, the address the sentinels give, so each connection must check
// the host it dials. status shows the holder and the waiter; the waiter
// gets the lock when the holder ends.
func TestSentinelTLS(t *testing.T) {
	t.Parallel()
	tp := redistest.StartTLSSentinel(t, 1, 2)
	const ttl = 2 * time.Second
	for _, s := range tp.Servers {
		s.WaitUp(ttl) // the restart guard trusts them
	}
	e := env("BATON_STORE="+strings.ReplaceAll(tp.URL(), "127.0.0.1:", "localhost:"), "BATON_TLS_CA="+tp.CAFile())
	holder := start(t, e, "lock", "--ttl", "2s", "a/b")
	holder.waitOutput("BATON_TOKEN=", 30*time.Second)
	waiter := start(t, e, "lock", "--ttl", "2s", "a/b")
	var out, stderr string
	var code int
	await.Until(t, 10*time.Second, "status showing the holder and the waiter", func() bool {
		out, stderr, code = run(t, e, "status", "--json", "a/b")
		return code == 0 && strings.Contains(out, `"holders":1,"waiters":1,`) && strings.Contains(out, `"role":"waiter"`)
	})
	if !strings.Contains(out, `"store":"rediss-sentinel://localhost:`) || stderr != "" {
		t.Errorf("status a/b: out %q, stderr %q", out, stderr)
	}
	holder.signal(2)
	waiter.waitOutput("BATON_TOKEN=", 10*time.Second)
	waiter.signal(2)
}
