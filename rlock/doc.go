// Package rlock is a reentrant, unfair mutual-exclusion lock named in Redis,
// with the semantics of Redisson's RLock.
//
// # Reentrancy
//
// A handle (New) is an owner in Redis; another handle is another owner,
// even in the same process and goroutine, and waits. Goroutines that share
// one handle exclude each other as with a sync.Mutex: a Lock on a handle
// that another call holds waits for that hold to end, in this process,
// without a request to Redis, and a TryLock finds it held. Redisson keys
// ownership to the thread; Go has no thread ids, so the context carries the
// identity: a Lock whose ctx descends from the hold's Context re-enters it
// and raises its hold count, and each Lock needs its Unlock. MultiMutex and
// RedLock follow the same rule. See "Sharing a handle" at redcoord.Locker.
//
// # Cost
//
// Taking a free lock is one round trip (EVALSHA), and so is Unlock: an
// uncontended Lock+Unlock costs exactly two. The first call after Redis
// restarts pays one more, to load the script.
//
// # Waking
//
// A Client with blocked Locks on a name registers itself, once, in the
// lock's waiter registry in Redis (a zset, P:{name}:waiters, whose member
// is the client id): the first try that finds the lock busy writes it, in
// the same round trip, and the Client's other blocked Locks on the name
// wait behind that one in a local queue, in arrival order, without a
// request of their own (TryLock always tries). The watchdog renews the
// registration while any of them waits, so a process that dies is dropped
// within one lease TTL. A release to zero wakes one registered Client,
// live ones (renewed within the last watchdog tick, with slack) before
// any its process no longer renews, with one message on its Client's
// channel (P:{name}:ch:<client id>), which only that process hears; the
// Client wakes its longest-waiting Lock, whose try registers the Client
// again if it loses. A try that takes the lock, or a Lock that gives up,
// takes the Client out of the registry unless other local waiters remain,
// even when a reply was lost on the way, so that a release does not
// spend its wake on a holder or on a waiter that has gone. An uncontended
// release publishes nothing, nor does a release whose wake is for its own
// Client (a waiter in the releasing process is next): its reply says so,
// and the Client wakes that waiter itself, as the message would have. A
// forced unlock wakes every registered Client once. So a release costs one
// message at most however many processes wait, where a broadcast on the
// name's channel would wake a waiter in every one of them to race for the
// lock.
//
// Pub/sub is a hint: a wake lost with a connection, or sent to a process
// that died, costs the waiters one poll interval at most (their timer:
// the holder's remaining lease or the max poll interval, whichever is
// shorter). A Client that polls (WithPolling, or SUBSCRIBE refused)
// registers nothing, and a wait whose subscription is not confirmed in
// time drops its registration and polls.
//
// # Fairness
//
// None. A woken waiter can lose to a handle that has not waited at all (a
// Lock that finds the lock free takes it), and then registers again. This
// gives the highest throughput, and it can starve a waiter under sustained
// contention. Use package rfairlock when waiters must be served in order.
//
// # Lease and watchdog
//
// Lock takes the Client's lease TTL and the watchdog renews it until Unlock;
// LockWithLease (and TryLockWithLease) takes a fixed lease that nothing
// renews, and Extend gives a hold a fixed lease from now. Either way a holder
// that dies keeps the lock at most one lease. When a hold is found gone
// (expired, or deleted by ForceUnlock), Lost is closed and Unlock returns
// ErrLeaseLost (see "Loss" in package redcoord). Token returns the hold's fencing token, which is what makes a
// lease-based lock safe against a holder paused past its lease.
//
// # Several names: MultiMutex
//
// NewMulti returns a MultiMutex, which holds the locks of several names or
// none: a transfer between two accounts, stock moved between warehouses.
// Each name's lock is an ordinary rlock lock held by a handle of the
// MultiMutex's own, so a Mutex of one of the names and the MultiMutex
// exclude each other; each hold is renewed by the watchdog in its one
// pipeline per tick, and has its own fencing token (Tokens).
//
// The names are locked in one order, the same for every MultiMutex: by
// their Redis Cluster slot, then by name. Names in one slot (on one server
// or through Sentinel: every name) are taken by one script, all or none:
// one round trip when they are free. When one is held by another owner,
// Lock keeps the names before it in that order, lets go of those after it,
// waits for that one as Mutex.Lock does (registered, and woken by its
// release in its own process), and tries again. On a Cluster each slot's
// names are taken in turn, holding the earlier slots'. Waiting only while
// holding names that come earlier in the one order, two MultiMutexes over
// overlapping names never wait for each other in a circle. A Lock that
// fails, or ends with its context, gives back what it took. Unlock
// releases every name, one round trip each. Re-entry is counted by the
// MultiMutex, without I/O. At most MaxMultiNames names.
//
// # Several servers: RedLock
//
// NewRedLock returns a RedLock, one lock over several independent Redis
// servers (not the nodes of one Cluster), one Client each: the Redlock
// algorithm, as redsync has it. Each attempt asks every server at once,
// each bounded by a tenth of the lease (at least 50ms); the lock is held
// when a majority granted it and validity is left: the lease less the
// attempt's time and the clock drift allowed (a hundredth of the lease,
// and 2ms). A failed attempt gives back what it got, and the next follows
// after a random back-off that doubles from 10ms up to the poll interval.
// A grant answered after its attempt decided is given back as it comes; a
// server whose answer or release is still to come is asked by the later
// attempts as another owner, so that it never touches their holds. Each
// server's hold is an rlock hold, renewed by its Client's watchdog; Lost
// closes when fewer than a majority may still hold it, and Validity says
// how long a majority's leases run by this process's clock. With a
// minority of the servers down it works on; with a majority down Lock
// fails at once with their errors.
//
// What it assumes, as facts:
//
//   - Time: the lease is measured by this process's clock, each server's
//     by its own; they must run at about the same rate (the drift
//     allowed), but need not agree on the time. A process paused longer
//     than the validity left (a stop-the-world pause, a stopped VM, a
//     swapped-out page) resumes believing it holds the lock while another
//     may hold it: Lost tells it on time only while it runs.
//   - Memory: a server must not forget a grant while it is held. One
//     restarted without persistence, or failed over to a replica that
//     missed the grant, forgets it: if the hold stood on just a majority,
//     another process can take the lock at once, and the holder learns it
//     at its next renewal, up to a third of the lease later
//     (TestRedLockRestartWithoutPersistence: with a 900ms lease, the other
//     process took the lock, and the holder's Lost closed 264ms after the
//     restart). Keep a restarted server out for a lease TTL, or persist
//     with appendfsync always.
//   - Fencing: Token is the largest of the granting servers' tokens. Any
//     two holders' majorities share a server, on which the later token is
//     higher (each server's tokens only grow), but the largest tokens may
//     come from different servers, whose counters and clocks are
//     independent: a server whose clock runs ahead can give an earlier
//     holder a larger token than a later holder's largest. So the token is
//     not guaranteed to increase across holders, and a store that fences
//     by it can take a stale holder's write. It increases when the
//     servers' clocks agree to within the time between two holds, which
//     is usual but not promised.
//
// When correctness depends on the lock, prefer one Redis (with replicas,
// redcoord.WithWaitReplicas, and a failover that waits a lease TTL) and
// its single fencing token, with Mutex; RedLock buys availability while a
// minority of independent servers is down, at N times the work per
// acquisition and with the weaker token above. In BenchmarkRedLock (bench
// module; 5 redis-servers on one 2-core machine, redsync in the same run)
// an uncontended Lock+Unlock sent 10 round trips for both, at 1784-1906
// against redsync's 2448-2634 per second; 8 processes taking turns made
// 299-467 acquisitions/s at 12.4-12.7 round trips each, redsync 424-529
// at 10.8-11.0.
//
// # Retries
//
// go-redis retries a command whose reply was lost on a broken connection,
// though Redis may already have run it. Each Lock and Unlock carries a
// request id, so a retried acquire does not re-enter twice and a retried
// release neither releases twice nor reports ErrNotHeld.
package rlock
