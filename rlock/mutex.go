package rlock

import (
	"context"
	"strconv"
	"time"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/hold"
	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/scripts"
	"github.com/redcoord/redcoord/internal/wait"
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

// New returns a handle on the lock named name. It does no I/O; a bad name or
// option is reported by every method of the handle, as ErrInvalidArgument.
func New(c *redcoord.Client, name string, opts ...Option) *Mutex {
	m := &Mutex{h: hold.NewHandle(c, name, kind, opts)}
	if m.h.Err == nil {
		m.ch = m.h.S.ClientChannel(name)
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
	return m.acquire(ctx, 0, true)
}

// LockWithLease is Lock with a fixed lease that the watchdog does not renew:
// the hold ends at Unlock or when lease runs out, whichever is first; Lost
// is closed then. A re-entry keeps the first hold's lease. lease must be at
// least 1ms.
func (m *Mutex) LockWithLease(ctx context.Context, lease time.Duration) error {
	if err := core.CheckLease("lease", lease); err != nil {
		return err
	}
	return m.acquire(ctx, lease, true)
}

// TryLock makes one attempt, in one round trip, and never waits: it reports
// whether the handle now holds the lock (with a watchdog-renewed lease).
// A lock held by another owner is (false, nil); a failure is (false, err).
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	return hold.Tried(m.acquire(ctx, 0, false))
}

func (m *Mutex) acquire(ctx context.Context, fixed time.Duration, block bool) error {
	h := m.h
	if err := h.CheckAcquire(ctx); err != nil {
		return err
	}
	e, err := h.Hold.Enter(ctx, block)
	if err != nil {
		return err
	}
	defer e.Exit()
	a := &attempt{h: h, op: h.Hold.Op(), req: h.NextRequest(), lease: h.LeaseArg(fixed), reg: scripts.NoRegistry}
	defer a.op.Stop()
	if block && h.S.Woken() {
		a.reg = scripts.Register
		defer a.stopBeat()
	}
	// A registered waiter is woken by its request id (see Unlock), and tries
	// at once. A polling one that does not hold the lock queues behind this
	// Client's waiters instead of overtaking them; a holder re-enters at once.
	spec := wait.Spec{Kind: kind, Name: h.Name, Channel: m.ch, Once: !block, Join: h.Hold.Count() == 0}
	if a.reg != scripts.NoRegistry {
		spec.ID = a.req
	}
	got, err := wait.Acquire(ctx, h.S.Wait(h.MaxPoll), spec, a)
	if err != nil {
		return err
	}
	return h.Took(ctx, got, fixed, a)
}

// attempt is one acquire's tries, and the undo of its request. A blocking
// acquire whose Client is woken by pub/sub registers its request in the
// lock's waiter registry when a try finds the lock busy, so that a release
// wakes this Client (see Unlock); a heartbeat keeps the registration alive
// while it waits. The try that takes the lock unregisters the request (see
// scripts.Registry), and Leave does when the acquire fails.
type attempt struct {
	h     *hold.Handle
	op    *hold.Op
	req   string
	lease scripts.Lease
	reg   scripts.Registry
	beat  *hold.Heartbeat // the registration's, once a try registered it
}

// registered records that a busy try sent at sent registered the request.
func (a *attempt) registered(sent time.Time) error {
	if a.beat == nil {
		ttl := a.h.S.Config.TTL
		script, keys, args := a.h.Lock.Beat(a.req, ttl)
		a.beat = hold.NewHeartbeat(a.h.S.Watchdog, lease.Renewal{Script: script, Keys: keys, Args: args})
	}
	return a.beat.Watch(sent)
}

// stopBeat ends the registration's heartbeat, if any.
func (a *attempt) stopBeat() {
	if a.beat != nil {
		a.beat.Stop()
	}
}

// Try sends the acquire script once, in the handle's turn, which an
// acquiring try keeps until the hold is recorded.
func (a *attempt) Try(ctx context.Context, _ string) (hold.Got, wait.Attempt, error) {
	held, err := a.op.Start(ctx)
	if err != nil {
		return hold.Got{}, wait.Attempt{}, err
	}
	sent := time.Now()
	reg := a.reg
	if reg == scripts.Register && wait.Deaf(ctx) {
		// Its wait cannot hear a wake: a registration would only spend a
		// release's wake, so the one an earlier try made goes.
		reg = scripts.Unregister
		a.stopBeat()
	}
	r, err := a.h.Lock.Acquire(ctx, a.h.S.Writer(), a.req, held.Arg, a.lease, reg)
	err = core.AcquireErr(r.OK, err) // a shortfall is undone by Leave
	if err != nil || !r.OK {
		a.op.Stop()
	}
	switch {
	case err != nil:
		return hold.Got{}, wait.Attempt{}, err
	case r.OK:
		a.stopBeat() // the script unregistered the request
	case reg == scripts.Register:
		if err := a.registered(sent); err != nil {
			return hold.Got{}, wait.Attempt{}, err
		}
	}
	return hold.Got{Acquired: r, Since: sent, Held: held}, wait.Attempt{Acquired: r.OK, Hint: r.Wait}, nil
}

// Leave undoes the request if Redis applied it, and unregisters it.
func (a *attempt) Leave(ctx context.Context) error {
	a.stopBeat()
	_, err := a.h.Lock.Leave(ctx, a.h.S.RDB, a.req)
	return err
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
	return m.h.Unlock(ctx, m.h.Lock.Release)
}

// TryLockWithLease is TryLock with a fixed lease, as LockWithLease: one
// attempt, in one round trip, that never waits.
func (m *Mutex) TryLockWithLease(ctx context.Context, lease time.Duration) (bool, error) {
	if err := core.CheckLease("lease", lease); err != nil {
		return false, err
	}
	return hold.Tried(m.acquire(ctx, lease, false))
}

// Extend gives the handle's hold a fixed lease that ends lease from now,
// in one round trip: see Extend at redcoord.Locker.
func (m *Mutex) Extend(ctx context.Context, lease time.Duration) error { return m.h.Extend(ctx, lease) }

// Forget deletes the name's fencing-token counter once the name is no
// longer used: see Forget at redcoord.Locker.
func (m *Mutex) Forget(ctx context.Context) (bool, error) { return m.h.Forget(ctx) }

// ForceUnlock deletes the lock whoever holds it, waking a waiter, and reports
// whether it was held. The holder's handle sees Lost closed as soon as its
// Client hears of it, or at its next renewal (see "Forced unlock" in
// package redcoord; at once if it is this handle); its Unlock returns
// ErrLeaseLost.
func (m *Mutex) ForceUnlock(ctx context.Context) (bool, error) {
	return m.h.ForceUnlock(ctx, m.h.Lock.Force)
}

// IsLocked reports whether any owner holds the lock.
func (m *Mutex) IsLocked(ctx context.Context) (bool, error) { return m.h.IsLocked(ctx) }

// HoldCount returns how many times this handle holds the lock (0: not held),
// as Redis sees it.
func (m *Mutex) HoldCount(ctx context.Context) (int64, error) { return m.h.HoldCount(ctx) }

// Holder returns who holds the lock; ok is false when it is free.
func (m *Mutex) Holder(ctx context.Context) (h redcoord.Holder, ok bool, err error) {
	return m.h.Holder(ctx)
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
	return m.h.Hold.Context(parent, "lock "+strconv.Quote(m.h.Name))
}

// noCopy lets go vet's copylocks check report copies of a Mutex.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

var (
	_ redcoord.Locker = (*Mutex)(nil)
	_ redcoord.Locker = (*MultiMutex)(nil)
	_ redcoord.Locker = (*RedLock)(nil)
)
