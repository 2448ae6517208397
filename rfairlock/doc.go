// Package rfairlock is a reentrant mutual-exclusion lock named in Redis that
// serves its waiters first come, first served, across processes, with the
// semantics of Redisson's RFairLock and a direct hand-off to the next waiter.
//
// # Fairness
//
// Waiters acquire in the order they first asked: a blocking Lock that finds
// the lock taken joins a queue in Redis, and keeps its place however often
// it re-checks. When the last hold is released, the release script itself
// makes the first live waiter the holder (hold count, lease, fencing token)
// and publishes the grant to that waiter alone, with the hold's token. Only
// its lease or a ForceUnlock can end a grant before its waiter sees it, and
// a ForceUnlock tells the holder's Client on the Client's own channel,
// which the Client subscribes once it has held a lock. So a waiter whose
// Client hears that channel, on the connection that brought the grant,
// takes a grant read within a third of the lease as the hold, without a
// round trip: if a force ended it, the force's notice comes after the
// grant on the same connection, and either arrives before Lock returns
// (Lock then fails, matching redcoord.ErrLeaseLost) or ends the hold just
// after, as it ends any hold forced (Lost closes). Otherwise (the Client's
// first hold, a reconnect since, Cluster, a fixed lease,
// redcoord.WithWaitReplicas, a grant read late) the waiter confirms the
// grant in Redis before Lock returns, in one round trip that does what the
// watchdog's first renewal would (it renews the lease of the hold with the
// grant's token, or, for a fixed lease, checks that hold is there; with
// WithWaitReplicas its WAIT also makes sure the replicas have the grant).
// A hand-off costs about one network delay, where rlock's costs a wake-up
// and a retry that may lose to a newcomer. Other waiters are not woken by
// a release.
//
// TryLock never queues and never overtakes: it fails while anyone waits,
// even if the lock is free for the instant between a holder's lease running
// out and the grant to the first waiter.
//
// The trade-off is in the waits, not the throughput: every waiter waits
// its turn, about the queue's length times the hold, where an unfair lock
// serves some waiters at once and starves others. In BenchmarkFairVsUnfair
// (64 handles in 8 processes, 1ms holds, one redis-server) both locks make
// about 650 acquisitions/s; rfairlock's waits are 95ms at the median and
// 99ms at p99, rlock's 11ms and 2.3s, and a waiter's crash costs the queue
// up to a lease TTL (see Liveness), which an unfair lock does not pay. Use
// package rlock when order does not matter.
//
// # Liveness
//
// A waiter that crashes must not block the queue. Each waiting Lock has a
// heartbeat deadline in the queue, one lease TTL ahead (WithLeaseTTL on the
// Client), renewed by the Client's watchdog in the same pipelined tick as
// its leases, every TTL/3. Scripts skip a waiter whose deadline has passed.
// A grant to a waiter that died before it saw the message expires with the
// lease that waiter asked for and passes on. A lock whose holder died is
// handed to the first waiter by the next script that sees it free: a
// waiter's re-check (at the latest when the lease runs out, or after the
// poll interval) or heartbeat. So from the moment the lock would have
// passed to a crashed waiter, or its crashed holder stopped renewing, the
// queue moves again within one lease TTL and one renew interval, whoever
// crashed (a waiter that asked for a longer fixed lease with LockWithLease
// can hold it up for that lease instead).
//
// A Lock whose context ends leaves the queue, or passes on a grant that
// raced in. If that clean-up cannot reach Redis, the entry lapses by its
// heartbeat. A grant message that is lost (a reconnect) costs at most one
// poll interval: the waiter's timed re-check finds that it holds the lock.
// A waiter whose heartbeat lapsed while it was alive (the process paused,
// or cut off from Redis, for a TTL) joins the queue again at the back.
//
// # Reentrancy
//
// A handle (New) is an owner in Redis; another handle is another owner,
// even in the same process and goroutine, and queues. Goroutines that share
// one handle exclude each other as with a sync.Mutex: a Lock on a handle
// that another call holds waits for that hold to end, in this process,
// without a request to Redis (and without a place in the queue), and a
// TryLock finds it held. Go has no thread ids, so the context carries the
// identity: a Lock whose ctx descends from the hold's Context re-enters it
// at once, without queueing, and raises its hold count; each Lock needs its
// Unlock. See "Sharing a handle" at redcoord.Locker.
//
// # Cost
//
// Taking a free lock with nobody queued is one round trip (EVALSHA), and so
// is Unlock. A contended Lock costs two: the try that queues it and a
// re-check once it is subscribed (none when its Client's channel is
// subscribed already), and a third where the grant that arrives by pub/sub
// must be confirmed (see above). Add one per poll interval it waits
// (WithMaxPollInterval), and the heartbeats, which ride on the watchdog's
// pipelined ticks. QueueLength and Position are one round trip each;
// Position is O(queue length) in Redis.
//
// # Lease and watchdog
//
// Lock takes the Client's lease TTL and the watchdog renews it until Unlock;
// LockWithLease takes a fixed lease that nothing renews. A grant gives the
// waiter the lease it asked for, from the moment of the grant, and the
// confirmation of a renewed one renews it. A fixed lease runs from the
// grant: the message carries the server's clock, which the waiter reads
// against that of its last check, so the lease is not reported lost early
// however long ago that check was. Either way a holder that dies keeps the
// lock at most one lease. When a hold is found gone (expired, or deleted by
// ForceUnlock), Lost is closed and Unlock returns ErrLeaseLost (see "Loss"
// in package redcoord); an Unlock after that deletes only what Redis may
// still have of the hold it lost, never a hold granted since to a Lock of
// the same handle that waits. Token returns the hold's fencing token, which
// is what makes a lease-based lock safe against a holder paused past its
// lease.
//
// # Retries
//
// go-redis retries a command whose reply was lost on a broken connection,
// though Redis may already have run it. Each Lock and Unlock carries a
// request id, so a retried acquire neither queues twice nor re-enters twice,
// and a retried release neither releases twice nor reports ErrNotHeld.
//
// # Keys
//
// For a name N and the Client's prefix P: the hold in the hash P:{N}:lock,
// the token counter P:{N}:fence, and the queue in P:{N}:queue (a list of
// request ids), P:{N}:alive (their heartbeat deadlines) and P:{N}:waiting
// (the lease and holder metadata a grant needs). The queue's keys expire by
// themselves once every waiter in them has lapsed. P:{N}:rel:<client id>,
// one per Client, keeps its handles' releases for a minute, so that a
// retried release is recognised, and their acquire requests that gave up,
// so that a late copy of one is refused. A grant is published on the grantee's Client's channel,
// P:{N}:ch:<client id>, which only that process hears.
package rfairlock
