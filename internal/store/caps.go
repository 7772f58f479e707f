package store

// What a store can do beyond locks, asked by the commands that need it
// instead of the store's kind.

// Memory is the scheme of the bench's in-process memory store
// (memory://), which Open does not open: its sessions are made in the
// bench's own process.
const Memory = "memory"

// InProcess reports whether the store lives in this process (Memory):
// there is nothing to dial or reach.
func (u URL) InProcess() bool { return u.Scheme == Memory }

// Members reports whether the store's servers are a cluster of members
// that `baton serve members` lists and `baton serve --join` joins: etcd's.
func (u URL) Members() bool { return u.IsEtcd() }
