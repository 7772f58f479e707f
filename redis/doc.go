// Package redis provides baton's locks on Redis: Mutex, a fair lock with
// fencing tokens on one server, and Redlock, the Redlock algorithm over N
// independent masters. Both hand out a *baton.Lease like every other baton
// lock: its Token fences, its Done closes when the hold may be lost.
//
// # Keys
//
// A lock named K uses these keys on the server:
//
//	K           string, the holder's random value, with the lock's ttl
//	            (SET K value NX PX ttl: the same key redsync uses)
//	K:token     integer, the fencing counter: INCR'd by every grant, in the
//	            same script as the SET; seeded with the server time in
//	            microseconds when missing, so tokens keep increasing even
//	            after a server restarted without persistence (unless its
//	            clock went back, or a million grants a second were drawn)
//	K:queue     zset, waiters' values scored by arrival ticket (FIFO)
//	K:waiting   zset, waiters' values scored by the server-time deadline of
//	            their place in line
//
// and the pub/sub channel K:release, on which releases publish the value
// of the waiter whose turn it is. K:queue and K:waiting vanish when nobody
// waits; K:token stays.
//
// # What a single server gives
//
// Mutual exclusion as long as the server keeps its data: a server
// restarted without persistence (or a replica promoted after an
// asynchronous failover) may grant the lock to a second client while the
// first still works. The fencing token is the answer to that and to
// paused holders: pass it to the resource, and have the resource refuse a
// token lower than one it has seen.
//
// # What Redlock gives, and what it does not
//
// Redlock keeps the lock available while a majority of the N masters is
// up, and holds only while a majority granted it within its validity. It
// does not give fencing tokens (a Redlock lease's Token is 0: the per-
// instance counters of a majority do not form one increasing sequence). Its
// safety rests on timing: it assumes bounded clock drift and no clock
// jumps on the servers and the client, and that a master does not lose a
// key while it is valid, which needs fsync on every write (appendfsync
// always) or a restarted master kept out of the vote for a ttl. baton
// keeps a master out of the quorum for one ttl when its run_id changed
// since we last saw it, or when it has been up for less than a ttl; it
// cannot help against a clock jump or a long process pause. Where
// correctness matters, use the single-server Mutex's fencing token, or
// ZooKeeper or etcd.
package redis
