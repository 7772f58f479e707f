package etcd_test

import (
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton/batontest"
	"github.com/batonhq/baton/internal/etcdtest"
)

// TestConformanceServeCluster runs the whole conformance suite against a
// three-member cluster of `baton serve` processes, the sessions spread
// over the members (the first on one, the next on another, …), so the
// suite checks what one session did (a node gone after a cancelled Lock,
// a permit free after a Release) from a session on another member, which
// may not have applied it yet when asked.
func TestConformanceServeCluster(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartServeCluster(t, 3)
	batontest.Run(t, harnessSpread(t, "etcd-serve×3", c.Endpoints(), clientv3.Config{}, true))
}
