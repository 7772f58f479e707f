// Package handle is the plumbing every lock handle shares, written once:
// the Lease it hands out, the Gate that lets one call at a time through a
// handle, and the Reentrant count of what the handle holds. The root
// package re-exports Lease; the backends' own locks (redis) build their
// handles from this package.
package handle
