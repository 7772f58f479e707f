package baton

import "github.com/batonhq/baton/internal/handle"

// Lease is one acquisition of a lock-like recipe (Mutex, RWMutex,
// Semaphore, Election, and the redis package's locks): it carries the
// fencing token of that acquisition and signals when the hold may have been
// lost.
//
// Its methods:
//
//   - Key is the lock's name, as the recipe was made with it.
//   - Token is the fencing token: strictly greater than the token of every
//     earlier acquisition of the same lock. Pass it to the resource you
//     protect and have it reject writes with a lower token.
//   - Done is closed when the lease ends: released by its holder (Err is
//     then ErrNotHeld) or lost (Err wraps ErrLost: with the session's error
//     when the session ended, with ErrRevoked when someone else removed our
//     node). It is closed no later than the moment another client could
//     acquire the same lock, so work guarded by the lease should stop when
//     Done closes.
//   - Err is nil while the lease is held, then says why it ended.
//   - Context(parent) returns a copy of parent cancelled when the lease
//     ends, with the lease's error as its cause.
//   - RevokeRequested is closed when someone asks the holder to let go
//     (a Mutex made Revocable, asked by Revoke or Curator's Revoker, or a
//     MultiLock with such a part); it never closes for other leases. The
//     lease stays held until released.
//   - Deadline is the loss deadline on the monotonic clock: the last
//     confirmed contact with the store plus the TTL minus the backend's
//     safety margin (the session's on ZooKeeper, etcd and memory; the
//     lock's validity on Redis; the earliest part's for a MultiLock). No
//     other client can take the lock before it. It is the zero Time once
//     the lease has ended.
//   - Valid reports whether the lease is held right now: Err is nil and
//     Deadline has not passed. It reads the clock, so it is right the moment
//     a paused process resumes, before the loss is noticed and Done closes.
//   - Jeopardy is closed when no contact has been confirmed until the grace
//     before Deadline (the smaller of 1 s and a fifth of the TTL), and at
//     the latest when Done closes: time to checkpoint or hand work back
//     while the lease still holds. It stays closed if contact comes back
//     (Valid then says the lease still holds).
//
// A process can be paused at any moment (a GC pause, SIGSTOP, a stalled
// VM) for longer than the TTL; while it is paused nothing can tell it that
// it lost the lock, and Done closes only after it resumes. So check Valid,
// or pass the fencing token to the resource you protect, immediately before
// each side effect, not only once when the lease was taken; a Done channel
// read in a select loop answers too late after a pause.
type Lease = handle.Lease
