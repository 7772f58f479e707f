// Package redsync holds interoperability tests between baton's Redis locks
// and github.com/go-redsync/redsync. It is a separate module so that
// redsync (whose own tests need a module the proxy refuses) never becomes
// a dependency of baton.
package redsync
