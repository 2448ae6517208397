package rfairlock

import (
	"context"
	"time"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/hold"
	"github.com/redcoord/redcoord/internal/scripts"
)

const kind = "rfairlock"

// Mutex is a handle on a reentrant, first-come-first-served lock named in
// Redis. The handle is the owner: another handle queues. It is safe for
// concurrent use: goroutines sharing it exclude each other, and re-enter its
// hold only through the hold's Context (see "Sharing a handle" at
// redcoord.Locker).
//
// A Mutex must not be copied after first use.
type Mutex struct {
	_ noCopy

	q hold.Fair // its H is the handle; its Lock is H.Lock and the queue's keys, zero when H.Err is set
}

// New returns a handle on the fair lock named name. It does no I/O; a bad
// name or option is reported by every method of the handle, as
// ErrInvalidArgument.
func New(c *redcoord.Client, name string, opts ...Option) *Mutex {
	h, keys := hold.NewHandle(c, name, kind, opts, core.KeyQueue, core.KeyAlive, core.KeyWaiting, core.ChanNameClient)
	m := &Mutex{q: hold.Fair{H: h}}
	if h.Err == nil {
		fair := scripts.NewFair(&h.Lock, keys[0], keys[1], keys[2], "")
		m.q = hold.Fair{H: h, Lock: fair, Ch: keys[3]}
	}
	return m
}

// Name returns the lock's name.
func (m *Mutex) Name() string { return m.q.H.Name }

// Owner returns the handle's owner id, as Holder reports it.
func (m *Mutex) Owner() string { return m.q.H.Lock.Owner }

// Lock blocks until it holds the lock or ctx is done. Waiters are served in
// the order they first asked, across processes. The hold's lease is the
// Client's lease TTL, renewed by the watchdog until Unlock. A Lock whose ctx
// descends from the hold's Context re-enters it at once, without queueing;
// any other Lock on a held handle waits for its hold to end first. A wait that
// ends returns an error matching both ErrNotAcquired and ctx.Err(); it
// leaves the queue, or passes on a grant that raced in.
func (m *Mutex) Lock(ctx context.Context) error {
	return m.named(m.acquire(ctx, 0, true))
}

// LockWithLease is Lock with a fixed lease that the watchdog does not renew:
// the hold ends at Unlock or when lease runs out, whichever is first; Lost
// is closed then. A lease granted by a release runs from the grant. A
// re-entry keeps the first hold's lease. lease must be at least 1ms.
func (m *Mutex) LockWithLease(ctx context.Context, lease time.Duration) error {
	if err := core.CheckLease("lease", lease); err != nil {
		return m.named(err)
	}
	return m.named(m.acquire(ctx, lease, true))
}

// TryLock makes one attempt, in one round trip, and never waits or queues:
// it takes the lock only if it is free and nobody is queued for it (or
// re-enters it), and reports whether the handle now holds it. A busy lock
// is (false, nil); a failure is (false, err).
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	ok, err := hold.Tried(m.acquire(ctx, 0, false))
	return ok, m.named(err)
}

func (m *Mutex) acquire(ctx context.Context, fixed time.Duration, block bool) error {
	return m.q.Acquire(ctx, fixed, block)
}

// Unlock releases one hold. The last one hands the lock to the first live
// waiter inside the same script, so the next holder needs no further round
// trip. A handle that does not hold the lock gets ErrNotHeld, and Redis is
// left unchanged. Once Lost has closed, Unlock returns ErrLeaseLost
// (matching ErrNotHeld too), deleting what Redis may still have of the hold.
// A done ctx does not stop Unlock, and one that fails leaves the hold to
// end with its lease: see "Releases" in package redcoord.
func (m *Mutex) Unlock(ctx context.Context) error {
	return m.named(m.q.H.Unlock(ctx, hold.Release(m.q.Release)))
}

// TryLockWithLease is TryLock with a fixed lease, as LockWithLease: one
// attempt, in one round trip, that never waits or queues.
func (m *Mutex) TryLockWithLease(ctx context.Context, lease time.Duration) (bool, error) {
	if err := core.CheckLease("lease", lease); err != nil {
		return false, m.named(err)
	}
	ok, err := hold.Tried(m.acquire(ctx, lease, false))
	return ok, m.named(err)
}

// Extend gives the handle's hold a fixed lease that ends lease from now,
// in one round trip: see Extend at redcoord.Locker.
func (m *Mutex) Extend(ctx context.Context, lease time.Duration) error {
	return m.named(m.q.H.Extend(ctx, lease))
}

// Forget deletes the name's fencing-token counter once the name is no
// longer used: see Forget at redcoord.Locker.
func (m *Mutex) Forget(ctx context.Context) (bool, error) {
	ok, err := m.q.H.Forget(ctx)
	return ok, m.named(err)
}

// ForceUnlock deletes the lock whoever holds it, hands it to the first live
// waiter, and reports whether it was held. The holder's handle sees Lost
// closed as soon as its Client hears of it, or at its next renewal (see
// "Forced unlock" in package redcoord; at once if it is this handle); its
// Unlock returns ErrLeaseLost.
func (m *Mutex) ForceUnlock(ctx context.Context) (bool, error) {
	ok, err := m.q.H.ForceUnlock(ctx, m.q.Lock.Force)
	return ok, m.named(err)
}

var _ redcoord.Locker = (*Mutex)(nil)
