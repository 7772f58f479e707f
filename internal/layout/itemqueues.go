package layout

import (
	"strings"
	"time"

	"github.com/batonhq/baton/backend"
)

// itemQueue describes a PriorityQueue or DelayQueue item (its kind is
// baton.PriorityKind or baton.DelayKind, as the backends list Curator's,
// etcd's and baton's item layouts) into e, and reports whether k is one.
func (d *describer) itemQueue(k Child, e *Entry) bool {
	p, isPQ := backend.ParsePriorityKind(k.Kind)
	_, due, isDQ := backend.ParseDelayKind(k.Kind)
	switch {
	case isPQ:
		e.Recipe, e.Role, e.Priority = RecipePriorityQueue, RoleItem, &p
	case isDQ:
		t := time.UnixMilli(due).UTC()
		e.Recipe, e.Role, e.Due = RecipeDelayQueue, RoleItem, &t
	default:
		return false
	}
	d.rep.Items++
	switch {
	case d.l.Store == StoreZooKeeper:
		e.Peer = PeerCurator // Curator's QueueBuilder layouts, which baton's queues share
	case d.l.Store == StoreEtcd && isPQ && !strings.HasPrefix(k.Name, backend.KindPriority+"-"):
		// etcd's recipe.PriorityQueue layout, NAME/<priority>/<seq>, which
		// baton's shares; older pq- items and delay items (dq-) are
		// baton's own.
		e.Peer = PeerEtcd
	}
	return true
}
