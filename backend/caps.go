package backend

import (
	"errors"
	"strings"
	"time"
)

// Renewer is an optional Conn capability that telemetry uses: a report of
// each confirmed renewal of the session.
type Renewer interface {
	// OnRenew makes f be called each time contact with the store is
	// confirmed, with the time that was left before the session's loss
	// deadline (Expirer). f must not block.
	OnRenew(f func(slack time.Duration))
}

// Backender is an optional Conn capability: the backend's name ("zk",
// "etcd", "memory"), the backend attribute of the session's metrics.
type Backender interface {
	Backend() string
}

// AbsolutePath is name as a store of absolute paths (ZooKeeper) names
// it: name itself if it starts with "/", else "/" + name.
func AbsolutePath(name string) string {
	if strings.HasPrefix(name, "/") {
		return name
	}
	return "/" + name
}

// ErrGuard means a guarded commit was refused because its guard node no
// longer exists in the incarnation given (Conn.Commit).
var ErrGuard = errors.New("baton: guard failed")
