package etcd

import (
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// noSpaceHint is what a write refused for lack of space says to do.
const noSpaceHint = "the server's space quota is full (etcd's NOSPACE alarm) and it refuses writes; " +
	"compact its history, defragment it and disarm the alarm (etcdctl compact, etcdctl defrag, etcdctl alarm disarm; " +
	"baton serve does all three by itself every --compaction-interval), or restart it with a larger --quota-backend-bytes"

// IsNoSpace reports whether err (even wrapped) is the server refusing a
// write because its backend reached its space quota: etcd then has its
// NOSPACE alarm raised and refuses every write (new sessions, locks,
// releases by deletion) until someone frees space and disarms the alarm.
// Sessions already open keep their leases alive meanwhile.
func IsNoSpace(err error) bool {
	return err != nil && (errors.Is(err, rpctypes.ErrNoSpace) || errors.Is(rpctypes.Error(err), rpctypes.ErrNoSpace))
}
