// Package postgres is the baton backend on PostgreSQL, through pgx. Open
// returns a session for the recipes: a row of a sessions table whose
// expiry the server counts on its own clock and the client renews.
//
// Nodes are rows of a nodes table. An ephemeral node belongs to its
// session and goes with it; every node's fencing token comes from one
// sequence, strictly increasing and never reused, and orders sequential
// siblings. A waiter registers a one-shot watch row on the one node it
// waits for; the change that fires it notifies that waiter's session
// alone, on the session's own LISTEN channel (one connection per session
// carries it), so a release wakes one waiter. A session that stops
// renewing is deleted by whoever needs it gone: a waiter behind one of
// its nodes, whose timer is set to the session's expiry, or any client's
// renewal, which sweeps expired sessions.
//
// The tables live in a schema of their own ("baton", or WithSchema, or
// the URL's schema= parameter), created and migrated on first use, or by
// Init (`baton postgres init`) for users without the CREATE privilege.
// docs/postgres.md describes the tables, the session rule and what is
// guaranteed.
package postgres
