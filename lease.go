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
type Lease = handle.Lease
