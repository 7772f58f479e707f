package baton

import (
	"errors"

	"github.com/batonhq/baton/internal/handle"
)

// Sentinel errors returned by the recipes and backends. Compare with
// errors.Is: they are usually wrapped with more context.
var (
	// ErrLocked is returned by TryLock (and other Try calls) when the
	// recipe is held by someone else.
	ErrLocked = handle.ErrLocked
	// ErrNotHeld is returned by Unlock (and other release calls) when the
	// caller holds nothing.
	ErrNotHeld = handle.ErrNotHeld
	// ErrLost is returned (and reported by Lease.Err) when a hold may have
	// been lost: the session ended, or our node vanished. Another client may
	// hold the lock now.
	ErrLost = handle.ErrLost
	// ErrRevoked is the cause of a loss (reported together with ErrLost)
	// when our node was removed by someone else while we held it: an
	// operator, another identity, a tool such as `etcdctl del`.
	ErrRevoked = handle.ErrRevoked
	// ErrSessionExpired means the server expired the session: every
	// ephemeral node it owned is gone.
	ErrSessionExpired = handle.ErrSessionExpired
	// ErrSessionLost means the session could not be confirmed alive within
	// its TTL minus a safety margin, so it is treated as gone before the
	// server can expire it.
	ErrSessionLost = handle.ErrSessionLost
	// ErrClosed means the session was closed by its owner.
	ErrClosed = handle.ErrClosed
	// ErrNotFound means a node or key does not exist.
	ErrNotFound = errors.New("baton: not found")
	// ErrExists means a node with a fixed name already exists.
	ErrExists = errors.New("baton: already exists")
	// ErrInvalidName means a recipe name or path is not usable on the store.
	ErrInvalidName = errors.New("baton: invalid name")
	// ErrInvalidTTL means a session TTL is outside what the store allows.
	ErrInvalidTTL = errors.New("baton: invalid ttl")
	// ErrInvalidPermits means a Semaphore was made with fewer than one
	// permit or more than MaxPermits.
	ErrInvalidPermits = errors.New("baton: invalid number of permits")
	// ErrInvalidParticipants means a DoubleBarrier was made for fewer than
	// one participant.
	ErrInvalidParticipants = errors.New("baton: invalid number of participants")
	// ErrPermitsMismatch means a Semaphore was asked for with another
	// number of permits than the one its holders use.
	ErrPermitsMismatch = errors.New("baton: number of permits differs from the semaphore's")
	// ErrParticipantsMismatch means a DoubleBarrier was entered with
	// another number of participants than the one its first participant
	// entered with.
	ErrParticipantsMismatch = errors.New("baton: number of participants differs from the double barrier's")
	// ErrPermission is satisfied (errors.Is) by every backend's refusal of
	// credentials or of access: a ZooKeeper ACL that does not grant this
	// session's identity (NoAuth) or failed authentication, etcd's
	// authentication and permission errors, Redis's refused credentials and
	// its ACL's refusals of a key, channel or command (NOPERM).
	ErrPermission = errors.New("baton: permission denied")
	// ErrPermitExpired is the cause of the end of a PermitSemaphore
	// permit (reported together with ErrLost) that was neither released
	// nor extended in time.
	ErrPermitExpired = errors.New("baton: permit expired")
	// ErrInvalidPriority means a PriorityQueue item's priority is outside
	// what the store's layout can hold: on etcd, whose items follow etcd's
	// recipes layout (the priority as five decimal digits in the key), it
	// must be 0 to 99999; ZooKeeper and memory take any int32.
	ErrInvalidPriority = errors.New("baton: priority out of range for the store")
	// ErrEmpty is returned by non-blocking queue reads on an empty queue.
	ErrEmpty = errors.New("baton: queue empty")
	// ErrUpgrade is returned by RWMutex.Lock on a handle that holds the read
	// lock: the write request would wait for our own reader forever.
	ErrUpgrade = errors.New("baton: cannot upgrade a read lock")
	// ErrConflict means a versioned write found the data changed since it
	// was read (Op.IfVersion, SharedCount.TrySet).
	ErrConflict = errors.New("baton: changed meanwhile")
	// ErrNoLeader is returned by Election.Leader when nobody leads.
	ErrNoLeader = errors.New("baton: no leader")
	// ErrIncompatible means a peer uses the name in a layout that does
	// not contend correctly with baton's (kazoo's Semaphore, Curator's
	// LeaderSelector beside an Election): see docs/interop.md.
	ErrIncompatible = errors.New("baton: a peer's incompatible layout on this name")
)

// IsSessionGone reports whether err says the session is over (expired,
// lost or closed).
func IsSessionGone(err error) bool {
	return errors.Is(err, ErrSessionExpired) || errors.Is(err, ErrSessionLost) || errors.Is(err, ErrClosed)
}
