// Package redis provides baton's locks on Redis: Mutex, a fair lock with
// fencing tokens on one server (or on a Redis Cluster: see below), and
// Redlock, the Redlock algorithm over N independent masters. Both hand out a *baton.Lease like every other baton
// lock: its Token fences, its Done closes when the hold may be lost.
//
// # Keys
//
// A lock named K uses these keys on the server:
//
//	K           string, the holder's value: 32 random hex digits, then,
//	            with WithIdentity, "." and the holder's identity (host,
//	            pid, command) as base64url JSON (ParseValue reads it); with
//	            the lock's ttl (SET K value NX PX ttl: the same key redsync
//	            uses). A waiter that joins the line appends "+" to a baton
//	            holder's value (not to another library's), so the release
//	            knows to look at the line; without it, the release is a
//	            plain compare-and-delete.
//	K:token     integer, the fencing counter: INCR'd by every grant, in the
//	            same request as the SET (pipelined after it, or in the
//	            acquire or release script; a pipelined INCR whose SET
//	            failed only skips a number); seeded with the server time in
//	            microseconds when missing, so tokens keep increasing even
//	            after a server restarted without persistence (unless its
//	            clock went back, or a million grants a second were drawn);
//	            and raised above the last token a Client was granted on K
//	            whenever a grant would not exceed it (see "Restarts")
//	K:queue     zset, the line: entries "<value>|<deadline>|<ttl>|<channel>"
//	            scored by ticket (the server time in microseconds when the
//	            waiter joined, or the Redlock waiter's own ticket), where
//	            deadline is the server time in ms after which a waiter that
//	            stopped refreshing its place is skipped
//
// K:queue vanishes when nobody waits: when it empties, or when it
// expires, its expiry kept between one and two entry lives ahead of the
// last join or refresh, so a line whose waiters all died goes away.
// K:token stays. Each Client
// subscribes one pub/sub channel of its own, baton:wake:<random>, on its
// first Lock (alongside that Lock's first attempt, so that a wait joins
// the line without waiting for the subscription; TryLock never
// subscribes), and keeps it until Close; a release
// that hands the lock to a waiter publishes "<entry> <token>" on that
// waiter's channel. Lock names ending in :token, :queue, :waiting or
// :release are refused (the last two were used by earlier versions).
//
// # Redis Cluster
//
// Dial("redis-cluster://[user:pass@]h:p,h:p,…") (rediss-cluster:// over
// TLS; any nodes of the cluster will do, the others are found) makes a
// Client on go-redis's ClusterClient; NewClient takes a
// *goredis.ClusterClient too. A Mutex on it is the same lock, with its
// keys in one hash slot so that each script runs on one node:
//
//	K           the lock's own key, as on one server: the key redsync and
//	            other clients given the same name use on the cluster
//	{K}:token   the fencing counter, with the name as its hash tag, so it
//	            hashes with K
//	{K}:queue   the line
//
// A name with a brace in it ("job{7}") would not hash as its hash-tagged
// keys: its other keys are "{T}K:token" and "{T}K:queue" instead, where T
// is baton's tag for K's slot (the first of the base-36 numbers 0, 1, …,
// z, 10, … in that slot). Either way every name has keys of its own, in
// its own slot, and the naming rule is the one of every store.
//
// Wake-ups use sharded pub/sub (SSUBSCRIBE, SPUBLISH: Redis 7 or later).
// A release script may publish only in its own slot, so a Client
// subscribes, for each slot it has waited in, one channel of that slot,
// baton:wake:{T}:<random>, on a pub/sub connection of its own to that
// slot's master, made on the first wait there and kept until Close
// (many locks in one slot share it). When the slot moves (a migration,
// or a failover that promoted a replica), the node ends the subscription
// and the Client subscribes again at the slot's new master, after reading
// the cluster's slot map anew (trying every 50 ms, backing off to 250 ms
// while the slot has no master); its waiters look again meanwhile.
//
// Redirections: commands follow MOVED and ASK, and go again after
// TRYAGAIN, CLUSTERDOWN or a failed connection, up to 14 times with
// go-redis's backoff (8 ms doubling to 512 ms: about 5 s, which bridges a
// failover with a short cluster-node-timeout; the URL's max_redirects
// sets another count). The scripts never touch a key they deleted in the
// same run, which a node refuses while the key's slot migrates. A script
// run twice (its reply lost, then retried) is harmless: an acquisition
// finds the key its own, a release finds it handed on and reports the
// lock lost. An Unlock that meets a failover keeps trying while the lease
// is valid, so the lock is handed on once the replica takes over rather
// than when the key expires.
//
// What a failover costs, and risks: Redis Cluster replicates
// asynchronously. A master killed before a grant reached its replica
// loses it: the promoted replica may lack the holder's key, and another
// client can take the lock while the first still holds (its next renewal
// finds the key gone and ends its lease). The fault suite
// (reliability/redis_cluster_test.go, docs/RELIABILITY.md) measures this;
// locks whose holders must never overlap across a failover need a store
// with consensus (ZooKeeper, etcd) or the fencing token checked by the
// resource. Tokens on Cluster are never below the server's time in
// microseconds when drawn (the counter is raised to it), so a counter
// that lost its last increments in a failover still gives larger tokens
// than any granted before, as long as the nodes' clocks differ by less
// than a failover takes. The restart guard (see Restarts) does not apply
// on Cluster: its replicas, not an empty restart, are how it recovers.
// Redlock is not for a cluster: a Quorum's masters are independent
// servers. WithReplicas is refused on a Cluster too (its WAIT would have
// to reach the node that ran the script).
//
// # What a single server gives
//
// Mutual exclusion while the server keeps its data, and across a restart
// that lost it (see Restarts). Not across a failover to a replica: a
// replica promoted after an asynchronous failover (Sentinel, a managed
// service) may lack the holder's key, and has been up for long; a Client
// that saw the old master sees the run_id change and waits a ttl, but one
// that never saw it (a new `baton lock` process) takes the key at once.
// WithReplicas is the answer to that (see Sentinel and replicas); the
// fencing token is the answer to paused holders: pass it to the resource,
// and have the resource refuse a token lower than one it has seen.
//
// # Sentinel and replicas
//
// Dial takes redis-sentinel://[user:pass@]h:p,h:p,…/MASTERNAME: the Client
// asks the sentinels for the master and follows it through failovers
// (go-redis's failover client; the hub's pub/sub connection follows it
// too). Redis replicates a write after answering it, and Sentinel
// promotes the replica it ranks best (lowest replica-priority, then the
// largest replication offset, then run_id) among those it can reach: it
// does not know which writes a replica lacks. So, without WithReplicas, a
// failover can lose a holder's key (another client takes the lock while
// the holder still holds) and the counter's last INCRs (a token is
// granted twice); docs/RELIABILITY.md measures both.
//
// WithReplicas(n) makes every write that makes or keeps a holder count
// only once WAIT n says n replicas have it: the acquisition with its
// token's INCR (WAIT is pipelined after the SET NX PX and INCR, or the
// acquire script, on the same connection: one request), the raise of the
// counter above a Client's last token, and each renewal. A hand-off is
// granted by the releasing client's script, on its connection, and WAIT
// covers only the writes of the connection it is sent on; so the woken
// waiter does not hold yet: it renews the key itself (a write of its own,
// after the grant and its INCR in the replication stream) with a WAIT,
// and holds once that is acknowledged, its validity counted from that
// renewal. (The releaser does not WAIT: a release lost in a failover
// leaves the old holder's key, which keeps the lock from everyone until
// its ttl runs out.) WAIT's timeout is a fifth of the ttl, at most a
// second. An acquisition not acknowledged by then is given back
// (compare-and-delete, handing the lock on to the next waiter) and is not
// held: Lock asks again until its ctx ends, TryLock fails (both errors
// wrap ErrNotAcknowledged). A renewal not acknowledged counts as failed:
// the lease ends when the validity of the last acknowledged one runs out,
// before the key, as acknowledged, can expire on any replica.
//
// What it guarantees, with n the number of the master's replicas: every
// replica Sentinel may promote has every acknowledged write. After a
// failover, a holder's key is there (until the expiry of its last
// acknowledged renewal, by which the holder's lease has ended), so nobody
// else takes the lock while a lease is live; and the counter is at least
// every token granted to a holder, so fencing tokens never repeat or go
// backwards. With n smaller than the number of replicas, that holds only
// if the replicas that may not have acknowledged are never promoted: give
// them replica-priority 0, or count them.
//
// What it does not guarantee:
//
//   - Availability: with n the number of replicas, one replica down (or a
//     failover, until the killed master is back as a replica) means no
//     lock is granted and every hold is lost when its renewals go
//     unacknowledged. A smaller n with replica-priority 0 on the rest
//     trades that back.
//   - WAIT is not consensus: a write not acknowledged may still reach a
//     replica and survive a failover; the give-back of an unacknowledged
//     grant may be lost with the old master, leaving a key nobody holds
//     until its ttl runs out (a delay, never two holders).
//   - Replicas acknowledge receipt, not fsync: a replica that restarts
//     empty forgets (as the restart guard assumes).
//   - Expiry on the promoted replica runs on its own clock (Redis 7
//     replicates PEXPIRE as an absolute time): the lease's margin assumes
//     the servers' clocks agree to within the drift allowance.
//   - Other clients: redsync, or baton without WithReplicas, on the same
//     key are not protected; a baton Client that saw the old master still
//     waits a ttl after the failover (the restart guard sees a new run_id,
//     and cannot tell a replica that has the keys from a server that lost
//     them).
//   - A master cut off from the sentinels and its replicas but not from
//     some clients keeps answering them: with WithReplicas its grants are
//     never acknowledged, so never held; without, they are, alongside the
//     new master's. min-replicas-to-write (with min-replicas-max-lag) on
//     the servers makes such a master refuse writes from every client,
//     redsync's included, a few seconds after it lost its replicas; it
//     bounds that window for everyone, and does not replace WithReplicas:
//     it checks replicas are connected, not that a write reached them.
//
// What a token is worth after a failover: with WithReplicas(number of
// replicas), a token was acknowledged before its holder was told, so the
// new master's counter is at or above it and every later token is
// higher; the resource can refuse lower tokens as on a single server.
// Without it, a token granted just before a failover may be granted again
// after it: the resource must not rely on it across failovers.
//
// # Restarts
//
// The restart guard, on one server as on every Redlock master: a server
// whose run_id changed since this Client last saw it, or that has been up
// for less than the lock's ttl, may have restarted without persistence and
// lost the key of a holder that still believes it holds (its lease ends at
// most a ttl after its last renewal, which the restart made fail). So no
// lock of that ttl is granted on it until a ttl has passed since the
// restart: a Mutex that gets the key there keeps it (renewing it) without
// holding, and holds once the ttl has passed, counting its validity from a
// renewal sent then; TryLock gives it back and fails with an error
// wrapping baton.ErrLocked and ErrRestartGuard; a Lock whose ctx ends
// meanwhile returns an error wrapping ctx.Err() and ErrRestartGuard, which
// names the server and the time left (Client.RestartGuard says the same
// at any time). A restart so costs a ttl of waiting instead of two holders
// at once, and so does a server started less than a ttl ago: a client that
// never saw it before cannot tell a fresh server from one restarted empty.
//
// The guard reads run_id and uptime_in_seconds with INFO server when a
// connection is made (NewClient hooks a *goredis.Client's OnConnect): a
// restarted server is only reachable through new connections, so the
// guard costs no request per lock cycle. A client NewClient cannot hook
// asks INFO after every grant. The guard binds baton's clients only:
// another library on the same key (redsync) takes a restarted server's
// free key at once. It cannot see a restart behind a proxy that keeps
// client connections open across it, nor vouch for a server whose INFO
// gives no run_id (no lock is granted there). It waits the lock's own ttl:
// every client of a lock must use the same ttl (or the longest).
//
// Fencing tokens across a restart: the counter K:token is lost with the
// keys and seeded again from the server clock in microseconds, above
// every token drawn before unless that clock went back (or more than a
// million tokens a second were drawn on K since its first use). A Client
// also remembers the last token it was granted on each key (the last
// 4,096 keys): a grant that would not exceed it raises the counter above
// it first (one more request, only then), so the tokens a Client is
// granted on a key never go backwards while it lives, whatever the
// server's clock does. Tokens granted to different processes are ordered
// by the server clock alone across an empty restart.
//
// A holder whose lease is live releases with one GETDEL. Should the key
// hold another value then (it was deleted behind the holder's back, by
// FLUSHALL, DEL or a restart, and taken since: exclusion is already
// lost), the release sets that value back at once, with the releasing
// lock's ttl since GETDEL does not return the other's; on a key shared by
// locks with different ttls, the other holder's key may so end sooner.
//
// # Fairness: what holds and what does not
//
// A waiter joins K's line in the script that found the lock taken, and a
// baton holder's release hands the lock to the first waiter in line whose
// entry is live (in the same script, with its token), publishing to that
// waiter alone. So while baton clients wait, the lock passes in arrival
// order, and a client that releases cannot take the lock back before the
// waiters ahead of it. What it does not promise:
//
//   - A Mutex freed without a hand-off goes to whoever asks first, not to
//     the head of the line: when the holder's key expired (it crashed or
//     was cut off) or another library's holder (redsync) deleted it.
//     Waiters look again when the holder's key expires, so none waits
//     past it. TryLock takes a free lock whatever the line. (A Redlock
//     waiter takes a free master only if no live waiter in that master's
//     line asked before it; a Redlock's first attempt, SET NX, takes any
//     free master, but on a key its Quorum had to wait for when it last
//     took it, the first attempt joins the lines instead. Likewise a
//     Mutex's first attempt is a plain SET NX PX unless its Client waited
//     for that key last time.)
//   - A waiter that died keeps its place until its entry's deadline (one
//     ttl after its last refresh); a release before then may hand it the
//     lock, which is then held by nobody until its ttl runs out. The line
//     moves on after that: nothing waits forever on a dead waiter.
//   - Redlock orders waiters by a ticket from the waiter's own clock, the
//     same on every master, so every master hands the lock to the same
//     waiter; FIFO across clients holds up to their clock skew. A master
//     that missed a waiter's join (down, or restarted empty) may hand its
//     key to another: a waiter without a majority keeps what it got and
//     looks again after about the per-instance timeout, and a waiter that
//     finds its own key on a master where an earlier waiter is in line
//     hands it on to that waiter, so the earliest waiter ends up with the
//     majority.
//
// A hand-off is a grant like any other: the new holder counts its
// validity from the send time of its last request that found it still in
// line (the key was set after that request reached the server).
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
// always) or a restarted master kept out of the vote for a ttl: the
// restart guard (see Restarts) keeps a master out of the quorum for one
// ttl when its run_id changed since we last saw it, or when it has been
// up for less than a ttl. It cannot help against a clock jump or a long
// process pause. Where
// correctness matters, use the single-server Mutex's fencing token, or
// ZooKeeper or etcd.
package redis
