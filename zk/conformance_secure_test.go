package zk

import (
	"testing"

	"github.com/batonhq/baton/batontest"
	"github.com/batonhq/baton/internal/testca"
	"github.com/batonhq/baton/internal/zktest"
)

// TestConformanceSecure runs the whole conformance suite, and the Conn
// suite, with every
// session over TLS (client certificates required), authenticated with one
// digest identity and creating nodes with CreatorACL.
func TestConformanceSecure(t *testing.T) {
	t.Parallel()
	ca := testca.New(t, "baton conformance CA")
	cert := ca.Issue(t, "zookeeper")
	srv := zktest.Start(t, zktest.WithTLS(zktest.TLS{Cert: cert.CertFile, Key: cert.KeyFile, CA: ca.CertFile, ClientAuth: "need"}))
	client := ca.Issue(t, "baton")
	cfg := ca.ClientConfig(t, &client)

	h := harnessOn(t, "zk-secure", srv, srv.SecureAddr(), WithTLS(cfg), digest("alice"), WithACL(CreatorACL...))
	batontest.Run(t, h)
	batontest.RunConn(t, h)
}
