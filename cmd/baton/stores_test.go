package main

import (
	"testing"

	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/proxy"
	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/internal/zktest"
)

// testStore is one kind of real server the CLI tests run against.
type testStore struct {
	name string
	// start runs a server for t and returns its host:port.
	start func(t *testing.T) string
	// url makes a --store URL for an address.
	url func(addr string) string
	// sessions: the store has sessions (every recipe), not only locks.
	sessions bool
}

var testStores = []testStore{
	{"etcd", func(t *testing.T) string { return etcdtest.Start(t).Addr() }, func(a string) string { return "etcd://" + a }, true},
	{"zk", func(t *testing.T) string { return zktest.Shared(t).Addr() }, func(a string) string { return "zk://" + a }, true},
	{"redis", func(t *testing.T) string { return redistest.Start(t, redistest.Config{}).Addr() }, func(a string) string { return "redis://" + a }, false},
}

// eachStore runs f against every store kind as a subtest, with baton's
// environment pointing at a server of that kind.
func eachStore(t *testing.T, sessionsOnly bool, f func(t *testing.T, st testStore, e []string)) {
	for _, st := range testStores {
		if sessionsOnly && !st.sessions {
			continue
		}
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			addr := st.start(t)
			f(t, st, env("BATON_STORE="+st.url(addr)))
		})
	}
}

// eachStoreProxied is eachStore with a fault proxy in front of the server:
// f gets the direct and the proxied environments.
func eachStoreProxied(t *testing.T, f func(t *testing.T, st testStore, direct, viaProxy []string, px *proxy.Proxy)) {
	for _, st := range testStores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			addr := st.start(t)
			px := proxy.Start(t, addr)
			f(t, st, env("BATON_STORE="+st.url(addr)), env("BATON_STORE="+st.url(px.Addr())), px)
		})
	}
}
