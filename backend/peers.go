package backend

// Peers is an optional Conn capability of a store shared with other
// clients' recipes (ZooKeeper: Curator's, kazoo's): it recognises, among
// the children of a recipe's name, a peer's node in a layout that cannot
// share the name with baton's recipe, so that the recipe refuses the name
// (baton.ErrIncompatible) instead of contending wrongly. Each method
// returns "" when kids hold no such node, else a description of it for
// the error. A Conn without it has no such peers.
type Peers interface {
	// ForeignCandidate describes a candidate among an election's kids
	// that orders only lock nodes and ignores latch ones (Curator's
	// LeaderSelector, kazoo's Election), so would lead beside an
	// Election.
	ForeignCandidate(kids []Node) string
	// ForeignSemaphoreLease describes a lease among a semaphore name's
	// kids kept in a layout baton's semaphore does not count (kazoo's
	// NAME/<uuid hex>), and that does not count baton's.
	ForeignSemaphoreLease(kids []Node) string
}
