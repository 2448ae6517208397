// Package hold is about a handle's holds, and what every handle is made of:
//
//   - base.go, options.go: the Base of every handle, locks and semaphores
//     alike (argument checks, the owner and its request ids), and the lock
//     handles' options.
//   - handle.go: the lock Handle around a Tracker (the lock hash and the
//     lease argument of its acquires); took.go: how an acquire that got the
//     hold is recorded (Handle.Took: a late reply confirmed first, then
//     Tracker.Took); unlock.go, extend.go and state.go: its Unlock, Extend,
//     ForceUnlock, Forget and state reads.
//   - acquire.go: the one acquire of every exclusive lock (Handle.Acquire:
//     check, the Gate, the Client's registration, the wait loop of package
//     acquire, Took), each Kind supplying its tries on a shared Attempt;
//     attempt_lock.go, attempt_fair.go: the two lock kinds side by side,
//     each one attempt that the loop makes again until it acquires:
//     rlock's unfair race for the lock hash (Unfair), and the FIFO queue
//     of rfairlock and relection (Fair); a blocked Lock takes part in its
//     Client's one registration in the lock's waiter registry through
//     core.ClientWaiter, as rrwlock's writers and the semaphores' acquires
//     do.
//   - hold.go: a handle's view of one of its holds (Tracker: count,
//     fencing token, the watchdog lease or fixed-lease timer, the channel
//     that reports the hold lost), which the locks keep one of, an
//     expirable semaphore one per permit, and a compound handle
//     (MultiMutex, RedLock) one whose hold its parts keep (see EndIf), and
//     the turn that serialises its requests (Op); release.go, extend.go, lost.go,
//     forced.go, scopes.go: what records a release, an Extend, a loss, a
//     forced unlock, and the contexts scoped to a hold; gate.go: the Gate
//     that keeps the goroutines sharing a handle out of each other's holds
//     (a Lock re-enters only with a ctx from the hold's Context); rare.go:
//     the part of a Tracker's state that only a lost, Extended or
//     unreleased hold needs; slot.go: the one-slot semaphore behind the
//     Gate and the Tracker's turn.
//
// A waiter's registration in Redis (a fair queue's entry, a waiting
// writer) is kept by the watchdog: see lease.Heartbeat.
package hold
