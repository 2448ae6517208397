package rlock

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/hold"
	"github.com/redcoord/redcoord/internal/hub"
)

const kind = "rlock"

// Mutex is a handle on a reentrant lock named in Redis. The handle is the
// owner: another handle waits. It is safe for concurrent use: goroutines
// sharing it exclude each other, and re-enter its hold only through the
// hold's Context (see "Sharing a handle" at redcoord.Locker).
//
// A Mutex must not be copied after first use.
type Mutex struct {
	_ noCopy

	h  *hold.Handle
	ch string // the Client's channel for the name, where its waiters are woken
}

// releaser is a Mutex as its release script (hold.Releaser), which
// Unlock hands to the handle as it is: no func value made per call or
// kept per handle.
type releaser Mutex

// Release is the release script: it names the hold by its token
// (hold.Tracker.ReleaseArg), so that a late copy of it does not drop a
// hold the handle took since. A release to zero whose next waiter is in
// this Client hands the wake to it here instead of by a message (see
// hold.Handle.HandOn). A release that failed may have been applied, its
// reply lost with such a wake: one of this Client's waiters is woken, in
// case (a spurious wake costs a try, a lost one a poll).
func (r *releaser) Release(ctx context.Context, rdb redis.Scripter, req string, all bool) (int64, error) {
	h := r.h
	n, wake, err := h.Lock.Release(ctx, rdb, req, all, h.Hold.ReleaseArg())
	if err != nil && !errors.Is(err, errs.ErrNotReplicated) {
		wake = hub.One()
	}
	h.HandOn(r.ch, wake)
	return n, err
}

// New returns a handle on the lock named name. It does no I/O; a bad name or
// option is reported by every method of the handle, as ErrInvalidArgument.
func New(c *redcoord.Client, name string, opts ...Option) *Mutex {
	h, keys := hold.NewHandle(c, name, kind, opts, core.KeyWaiters, core.ChanNameClient)
	m := &Mutex{h: h}
	if m.h.Err == nil {
		m.ch = keys[1] // the Client's channel for the name
	}
	return m
}

// Name returns the lock's name.
func (m *Mutex) Name() string { return m.h.Name }

// Owner returns the handle's owner id, as Holder reports it.
func (m *Mutex) Owner() string { return m.h.Lock.Owner }

// Lock blocks until it holds the lock or ctx is done. The hold's lease is the
// Client's lease TTL, renewed by the watchdog until Unlock, so a holder that
// dies keeps the lock at most one TTL. A Lock whose ctx descends from the
// hold's Context re-enters it at once (one round trip); any other Lock on a
// held handle waits for its hold to end first. A wait that ends returns an error
// matching both ErrNotAcquired and ctx.Err(), and leaves Redis as it was.
func (m *Mutex) Lock(ctx context.Context) error {
	return m.named(m.acquire(ctx, 0, true))
}

// LockWithLease is Lock with a fixed lease that the watchdog does not renew:
// the hold ends at Unlock or when lease runs out, whichever is first; Lost
// is closed then. A re-entry keeps the first hold's lease. lease must be at
// least 1ms.
func (m *Mutex) LockWithLease(ctx context.Context, lease time.Duration) error {
	if err := core.CheckLease("lease", lease); err != nil {
		return m.named(err)
	}
	return m.named(m.acquire(ctx, lease, true))
}

// TryLock makes one attempt, in one round trip, and never waits: it reports
// whether the handle now holds the lock (with a watchdog-renewed lease).
// A lock held by another owner is (false, nil); a failure is (false, err).
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	ok, err := hold.Tried(m.acquire(ctx, 0, false))
	return ok, m.named(err)
}

func (m *Mutex) acquire(ctx context.Context, fixed time.Duration, block bool) error {
	return m.h.Acquire(ctx, &hold.Unfair{Ch: m.ch}, fixed, block)
}

// Unlock releases one hold; the last one frees the lock and wakes one
// registered waiter, in its own process (see Waking in the package
// documentation). A handle that does not hold the lock
// gets ErrNotHeld, and Redis is left unchanged. Once Lost has closed, Unlock
// returns ErrLeaseLost (matching ErrNotHeld too), deleting what Redis may
// still have of the hold. A done ctx does not stop Unlock, and one that
// fails leaves the hold to end with its lease: see "Releases" in package
// redcoord.
func (m *Mutex) Unlock(ctx context.Context) error {
	return m.named(m.h.Unlock(ctx, (*releaser)(m)))
}

// TryLockWithLease is TryLock with a fixed lease, as LockWithLease: one
// attempt, in one round trip, that never waits.
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
	return m.named(m.h.Extend(ctx, lease))
}

// Forget deletes the name's fencing-token counter once the name is no
// longer used: see Forget at redcoord.Locker.
func (m *Mutex) Forget(ctx context.Context) (bool, error) {
	ok, err := m.h.Forget(ctx)
	return ok, m.named(err)
}

// ForceUnlock deletes the lock whoever holds it, waking a waiter, and reports
// whether it was held. The holder's handle sees Lost closed as soon as its
// Client hears of it, or at its next renewal (see "Forced unlock" in
// package redcoord; at once if it is this handle); its Unlock returns
// ErrLeaseLost.
func (m *Mutex) ForceUnlock(ctx context.Context) (bool, error) {
	ok, err := m.h.ForceUnlock(ctx, m.h.Lock.Force)
	return ok, m.named(err)
}

// IsLocked reports whether any owner holds the lock.
func (m *Mutex) IsLocked(ctx context.Context) (bool, error) {
	ok, err := m.h.IsLocked(ctx)
	return ok, m.named(err)
}

// HoldCount returns how many times this handle holds the lock (0: not held),
// as Redis sees it.
func (m *Mutex) HoldCount(ctx context.Context) (int64, error) {
	n, err := m.h.HoldCount(ctx)
	return n, m.named(err)
}

// Holder returns who holds the lock; ok is false when it is free.
func (m *Mutex) Holder(ctx context.Context) (h redcoord.Holder, ok bool, err error) {
	h, ok, err = m.h.Holder(ctx)
	return h, ok, m.named(err)
}

// Token returns the fencing token of the handle's current hold, 0 when it
// holds none: see Token at redcoord.Locker.
func (m *Mutex) Token() uint64 { return m.h.Hold.Token() }

// Lost returns a channel closed when the handle's most recent hold is
// found gone: see Lost at redcoord.Locker.
func (m *Mutex) Lost() <-chan struct{} { return m.h.Hold.Lost() }

// Context returns a copy of parent that is cancelled when the handle's
// current hold ends, and through which a Lock re-enters it: see Context at
// redcoord.Locker.
func (m *Mutex) Context(parent context.Context) (context.Context, context.CancelFunc) {
	return m.h.Hold.Context(parent, m.h.Named(""))
}

// named names the lock in err, after the sentinel's words (see errs.About).
func (m *Mutex) named(err error) error { return errs.About(kind, m.h.Name, err) }

// noCopy lets go vet's copylocks check report copies of a Mutex.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

var (
	_ redcoord.Locker = (*Mutex)(nil)
	_ redcoord.Locker = (*MultiMutex)(nil)
	_ redcoord.Locker = (*RedLock)(nil)
)
