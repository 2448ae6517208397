// Package rlock is a reentrant, unfair mutual-exclusion lock named in Redis,
// with the semantics of Redisson's RLock.
//
// # Reentrancy
//
// A handle (New) is an owner. Lock on a handle that holds the lock re-enters
// it and raises its hold count; each Lock needs its Unlock. Another handle is
// another owner, even in the same process and goroutine, and waits: give each
// goroutine that must exclude the others its own handle, from one shared
// redcoord.Client.
//
// # Cost
//
// Taking a free lock is one round trip (EVALSHA), and so is Unlock: an
// uncontended Lock+Unlock costs exactly two. The first call after Redis
// restarts pays one more, to load the script.
//
// # Fairness
//
// None. A release wakes one waiter in each process that has waiters, and the
// first attempt to reach Redis wins: a waiter that was just woken can lose to
// a handle that has not waited at all. This gives the highest throughput,
// and it can starve a waiter under sustained contention. Use package
// rfairlock when waiters must be served in order.
//
// # Lease and watchdog
//
// Lock takes the Client's lease TTL and the watchdog renews it until Unlock;
// LockWithLease takes a fixed lease that nothing renews. Either way a holder
// that dies keeps the lock at most one lease. When a hold is found gone
// (expired, or deleted by ForceUnlock), Lost is closed and Unlock returns
// ErrLeaseLost (see "Loss" in package redcoord). Token returns the hold's fencing token, which is what makes a
// lease-based lock safe against a holder paused past its lease.
//
// # Retries
//
// go-redis retries a command whose reply was lost on a broken connection,
// though Redis may already have run it. Each Lock and Unlock carries a
// request id, so a retried acquire does not re-enter twice and a retried
// release neither releases twice nor reports ErrNotHeld.
package rlock
