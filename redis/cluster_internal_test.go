package redis

import "testing"

// TestClusterURLChecksEachNodesName: go-redis's ParseClusterURL names the
// first seed node as the TLS ServerName of every connection, so a node
// whose certificate names only itself (its announced address) would be
// refused. The parsed options leave ServerName empty: crypto/tls then
// checks each certificate against the host that connection dials.
func TestClusterURLChecksEachNodesName(t *testing.T) {
	opt, err := parseClusterURL("rediss-cluster://node-a.example:7000,node-b.example:7001")
	if err != nil {
		t.Fatal(err)
	}
	if opt.TLSConfig == nil {
		t.Fatal("rediss-cluster:// without a TLS configuration")
	}
	if got := opt.TLSConfig.ServerName; got != "" {
		t.Errorf("TLS ServerName %q for every node, want \"\" (each node checked against the host dialed)", got)
	}
}
