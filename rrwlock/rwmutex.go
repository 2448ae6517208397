package rrwlock

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/acquire"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/hold"
	"github.com/redcoord/redcoord/internal/hub"
	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/scripts"
)

const kind = "rrwlock"

// RWMutex is a handle on a reentrant read-write lock named in Redis: any
// number of readers, or one writer. The handle is the owner of its holds:
// another handle is another owner. It is safe for concurrent use:
// goroutines sharing it share its read holds, and its write hold excludes
// them (see Readers and writers in the package documentation).
//
// An RWMutex must not be copied after first use.
type RWMutex struct {
	_ noCopy

	h    *hold.Handle  // the write hold (h.Hold) and what both sides share
	read *hold.Tracker // the read holds
	rw   scripts.RW    // zero when h.Err is set
	wch  string        // the Client's writers' channel for the name, where its writers are woken
	// unlock is the write side's release script (see writeRelease), bound once.
	unlock hold.Release
	// runlock is the read side's release script (see readRelease), bound once.
	runlock hold.Release
}

// New returns a handle on the read-write lock named name. It does no I/O; a
// bad name or option is reported by every method of the handle, as
// ErrInvalidArgument.
func New(c *redcoord.Client, name string, opts ...Option) *RWMutex {
	h, keys := hold.NewHandle(c, name, kind, opts, core.KeyReaders, core.KeyReadLeases, core.KeyWriters,
		core.KeyWriterWaiters)
	m := &RWMutex{h: h, read: hold.New()}
	m.unlock = m.writeRelease
	m.runlock = m.readRelease
	if h.Err == nil {
		m.rw = scripts.RW{Lock: h.Lock, Readers: keys[0], Leases: keys[1], Writers: keys[2],
			WriterWaiters: keys[3],
			WriterChannel: h.Key(core.ChanWritersClient), Value: h.Value()}.Prepared()
		m.wch = h.S.KeyTail(name, core.ChanWritersClient, h.S.ID)
		m.read.Observe(h.S.Config.Observer, kind, name)
		m.read.Heed(h.S.Notices, core.Held{Owner: h.Owner, Read: true})
	}
	return m
}

// Name returns the lock's name.
func (m *RWMutex) Name() string { return m.h.Name }

// Owner returns the handle's owner id, as State reports it.
func (m *RWMutex) Owner() string { return m.h.Lock.Owner }

// Lock blocks until the handle holds the write lock or ctx is done. While it
// waits, new readers wait too (writer preference), so a stream of readers
// cannot starve it. The hold's lease is the Client's lease TTL, renewed by
// the watchdog until Unlock. A Lock whose ctx descends from the write hold's
// Context re-enters it at once; any other Lock on a handle whose write hold
// another call took waits for it to end first. A handle that holds only read holds gets ErrUpgrade
// at once: two readers upgrading would wait for each other forever. A wait
// that ends returns an error matching both ErrNotAcquired and ctx.Err().
func (m *RWMutex) Lock(ctx context.Context) error {
	return m.named(m.write(ctx, 0, true))
}

// LockWithLease is Lock with a fixed lease that the watchdog does not renew:
// the hold ends at Unlock or when lease runs out, whichever is first; Lost
// is closed then. A re-entry keeps the first hold's lease. lease must be at
// least 1ms.
func (m *RWMutex) LockWithLease(ctx context.Context, lease time.Duration) error {
	if err := core.CheckLease("lease", lease); err != nil {
		return m.named(err)
	}
	return m.named(m.write(ctx, lease, true))
}

// TryLock makes one attempt at the write lock, in one round trip, and never
// waits: a busy lock is (false, nil), and does not hold readers back.
func (m *RWMutex) TryLock(ctx context.Context) (bool, error) {
	ok, err := hold.Tried(m.write(ctx, 0, false))
	return ok, m.named(err)
}

// TryLockWithLease is TryLock with a fixed lease, as LockWithLease.
func (m *RWMutex) TryLockWithLease(ctx context.Context, lease time.Duration) (bool, error) {
	if err := core.CheckLease("lease", lease); err != nil {
		return false, m.named(err)
	}
	ok, err := hold.Tried(m.write(ctx, lease, false))
	return ok, m.named(err)
}

// Extend gives the handle's write hold a fixed lease that ends lease from
// now, in one round trip: see Extend at redcoord.Locker.
func (m *RWMutex) Extend(ctx context.Context, lease time.Duration) error {
	return m.named(m.h.Extend(ctx, lease))
}

// Unlock releases one write hold. A handle that does not hold the write lock
// gets ErrNotHeld, and Redis is left unchanged; once Lost has closed, it
// gets ErrLeaseLost, as rlock's Unlock says. A done ctx does not stop it
// (see "Releases" in package redcoord). The last release wakes
// one registered waiting writer, or, when no writer waits, every waiting
// reader.
func (m *RWMutex) Unlock(ctx context.Context) error {
	return m.named(m.h.Unlock(ctx, m.unlock))
}

// writeRelease is the write side's release script (a hold.Release): it
// names the handle's write hold by its token (hold.Tracker.ReleaseArg), as
// rlock's release does; a wake it leaves for a writer of this Client is
// handed on here, as rlock's release does.
func (m *RWMutex) writeRelease(ctx context.Context, rdb redis.Scripter, req string, all bool) (int64, error) {
	n, wake, err := m.rw.Unlock(ctx, rdb, req, all, m.h.Hold.ReleaseArg())
	if err != nil && !errors.Is(err, errs.ErrNotReplicated) {
		wake = hub.One() // its reply may have carried one (see rlock)
	}
	m.h.HandOn(m.wch, wake)
	return n, err
}

// RLock blocks until the handle holds a read lock or ctx is done. Readers
// share the lock; a writer holding it, or waiting for it, makes new readers
// wait. A handle that holds a read lock, and no write lock, re-enters at
// once, even while writers wait. An RLock whose ctx descends from the
// handle's write hold's Context takes a read hold beside it (a downgrade:
// take a read hold, then Unlock the write hold); any other waits for the
// handle's write hold to end. Each handle's
// read hold has its own lease, renewed by the watchdog until RUnlock, so a
// reader that dies holds the lock at most one lease TTL.
func (m *RWMutex) RLock(ctx context.Context) error {
	return m.named(m.readLock(ctx, 0, true))
}

// RLockWithLease is RLock with a fixed lease that the watchdog does not
// renew; RLost is closed when it runs out. lease must be at least 1ms.
func (m *RWMutex) RLockWithLease(ctx context.Context, lease time.Duration) error {
	if err := core.CheckLease("lease", lease); err != nil {
		return m.named(err)
	}
	return m.named(m.readLock(ctx, lease, true))
}

// TryRLock makes one attempt at a read lock, in one round trip, and never
// waits: a busy lock is (false, nil).
func (m *RWMutex) TryRLock(ctx context.Context) (bool, error) {
	ok, err := hold.Tried(m.readLock(ctx, 0, false))
	return ok, m.named(err)
}

// TryRLockWithLease is TryRLock with a fixed lease, as RLockWithLease.
func (m *RWMutex) TryRLockWithLease(ctx context.Context, lease time.Duration) (bool, error) {
	if err := core.CheckLease("lease", lease); err != nil {
		return false, m.named(err)
	}
	ok, err := hold.Tried(m.readLock(ctx, lease, false))
	return ok, m.named(err)
}

// RExtend gives the handle's read hold a fixed lease that ends lease (at
// least 1ms) from now, in one round trip, as Extend does for the write
// hold: the watchdog no longer renews it, and RLost closes when it ends. A
// read hold that already ended is ErrLeaseLost (matching ErrNotHeld); a
// handle without a read hold gets ErrNotHeld. An RExtend that fails
// otherwise than with ErrWrongType (a timeout, a dropped connection) may
// have set the lease: the hold is renewed as before, but RLost closes when
// that lease would end unless a later RExtend succeeds.
func (m *RWMutex) RExtend(ctx context.Context, lease time.Duration) error {
	h := m.h
	if err := core.CheckLease("lease", lease); err != nil {
		return m.named(err)
	}
	if err := h.Check(ctx); err != nil {
		return m.named(err)
	}
	send := func() (bool, error) {
		return m.rw.RExtend(ctx, h.S.Writer(), h.NextRequest(), lease, m.read.ReleaseArg())
	}
	return m.named(m.read.Extend(ctx, h.Named("read lock"), lease, send))
}

// RUnlock releases one read hold, with the errors of Unlock. The last
// reader's release wakes one registered waiting writer.
func (m *RWMutex) RUnlock(ctx context.Context) error {
	return m.named(m.h.UnlockOn(ctx, m.read, "read lock", m.runlock))
}

// readRelease is the read side's release script (a hold.Release): it
// names the handle's read hold (hold.Tracker.ReleaseArg), as writeRelease names
// its write hold.
func (m *RWMutex) readRelease(ctx context.Context, rdb redis.Scripter, req string, all bool) (int64, error) {
	return m.rw.RUnlock(ctx, rdb, req, all, m.read.ReleaseArg())
}

// Forget deletes the name's fencing-token counter once the name is no
// longer used: see Forget at redcoord.Locker. Until the next write hold,
// readers then report RToken 0.
func (m *RWMutex) Forget(ctx context.Context) (bool, error) {
	ok, err := m.h.Forget(ctx)
	return ok, m.named(err)
}

// ForceUnlock ends the write hold and every read hold, whoever holds them,
// and reports whether any was held. Their handles see Lost or RLost closed
// as soon as their Clients hear of it, or at their next renewal (see
// "Forced unlock" in package redcoord; at once for this handle's); Unlock
// or RUnlock then returns ErrLeaseLost.
func (m *RWMutex) ForceUnlock(ctx context.Context) (bool, error) {
	ok, err := m.h.ForceUnlock(ctx, m.rw.Force)
	if err == nil && ok {
		m.read.Forced()
	}
	return ok, m.named(err)
}

// write is Lock, LockWithLease and TryLock.
func (m *RWMutex) write(ctx context.Context, fixed time.Duration, block bool) error {
	return m.h.Acquire(ctx, &writeAttempt{m: m}, fixed, block)
}

// writeAttempt is one write acquire's tries, and the undo of its request
// (a hold.Kind). A blocked writer whose Client is woken by pub/sub takes
// part in its Client's one registration in the writers' wake registry
// (see core.ClientWaiter); a release wakes the Client's longest-waiting
// writer. A waiting writer's heartbeat (its Attempt's) keeps its entry in
// KEYS[5], which holds new readers back.
type writeAttempt struct {
	hold.Attempt
	m      *RWMutex
	client core.ClientWaiter // the acquire's part in the Client's registration (Wakes.Waiter)
}

// Wakes says that the Client's writers queue on its channel for the name.
func (a *writeAttempt) Wakes() hold.Wakes {
	return hold.Wakes{Mode: acquire.ClientQueue, Channel: a.m.wch, Registry: a.m.rw.WriterWaiters, Reg: a,
		Waiter: &a.client}
}

// Try sends the write acquire once, in the handle's turn, which an
// acquiring try keeps until the hold is recorded.
func (a *writeAttempt) Try(ctx context.Context, w acquire.Wake) (got hold.Got, att acquire.Attempt, err error) {
	m, h := a.m, a.H
	held, err := a.Op.Start(ctx)
	if err != nil {
		return got, acquire.Attempt{}, err
	}
	req := a.Op.Request(&h.Base, a.Req, held.Held)
	defer func() {
		if err != nil || !att.Acquired {
			a.Op.Stop()
		}
	}()
	now := time.Now()
	reg := a.CW.Mode(w)
	ttl := h.TTL()
	r, upgrade, err := m.rw.Write(ctx, h.S.Writer(), req, held.Arg, a.Lease, a.Block, reg, ttl)
	err = core.AcquireErr(r.OK, err) // a shortfall is undone by Leave
	switch {
	case err != nil:
		return got, acquire.Attempt{}, err
	case upgrade:
		return got, acquire.Attempt{}, errs.Both(errs.ErrNotAcquired,
			errs.New(errs.ErrUpgrade, "the handle holds a read lock; RUnlock it first"))
	}
	if err := a.CW.Sent(ctx, reg, now, r.OK); err != nil {
		return got, acquire.Attempt{}, err
	}
	if r.OK {
		return hold.Got{Acquired: r, Since: now, Held: held}, acquire.Attempt{Acquired: true}, nil
	}
	if err := a.Wait(now, a.heartbeat); err != nil {
		return got, acquire.Attempt{}, err
	}
	return got, acquire.Attempt{Hint: r.Wait}, nil
}

// heartbeat is the renewal of the waiting writer's entry.
func (a *writeAttempt) heartbeat() lease.Renewal {
	script, keys, args := a.m.rw.Renewal(true, a.H.TTL())
	return lease.Renewal{Script: script, Keys: keys, Args: args}
}

// Leave undoes the request if Redis applied it, and stops waiting as a
// writer; the Client leaves the writers' wake registry unless other local
// writers remain. A wake the leave frees for a writer of this Client is
// handed on here.
func (a *writeAttempt) Leave(ctx context.Context) error {
	m, h := a.m, a.H
	a.StopWaiting()
	_, wake, err := m.rw.Leave(ctx, h.S.RDB, a.Op.Sent(a.Req), true, a.CW.Leaving() != 0)
	h.HandOn(m.wch, wake)
	return err
}

// Beat makes the heartbeat of the Client's registration in the writers'
// registry (a hold.Registrant).
func (a *writeAttempt) Beat() *lease.Heartbeat {
	h := a.H
	script, keys, args := a.m.rw.Beat(h.S.ID, h.TTL())
	return lease.NewHeartbeat(h.S.Watchdog, lease.Renewal{Script: script, Keys: keys, Args: args})
}

// Drop takes the Client out of the registry, by a leave of a request never
// sent.
func (a *writeAttempt) Drop(ctx context.Context) {
	h := a.H
	_, _, _ = a.m.rw.Leave(ctx, h.S.RDB, h.NextRequest(), true, false)
}

// readLock is RLock, RLockWithLease and TryRLock.
func (m *RWMutex) readLock(ctx context.Context, fixed time.Duration, block bool) error {
	h := m.h
	if err := h.CheckAcquire(ctx); err != nil {
		return err
	}
	// Read holds are shared by the goroutines that share the handle, but a
	// write hold of the handle's excludes them as another writer would: a
	// read acquire waits for it, in this process, unless its ctx descends
	// from the write hold's Context (a downgrade); it keeps the write
	// side's slot until it ends, so that no write hold of the handle's
	// begins meanwhile. A handle that reads and does not write re-enters
	// its read hold without the slot: no write hold of its own can begin
	// while it reads (ErrUpgrade), and a read acquire waiting behind a
	// writer of another owner must not hold up a re-entry.
	if m.read.Count() == 0 || h.Hold.Count() > 0 {
		e, err := h.Hold.Enter(ctx, block)
		if err != nil {
			return err
		}
		defer e.Exit()
	}
	op := m.read.Op()
	defer op.Stop()
	ttl := h.TTL()
	leaseTTL := cmp(fixed, ttl)
	req := h.NextRequest()
	try := func(ctx context.Context, _ acquire.Wake) (got hold.Got, att acquire.Attempt, err error) {
		held, err := op.Start(ctx)
		if err != nil {
			return got, acquire.Attempt{}, err
		}
		defer func() {
			if err != nil || !att.Acquired {
				op.Stop()
			}
		}()
		// Numbered in the turn, fresh or not: the read scripts refuse a
		// request numbered below the read hold's last (see is_stale in
		// scripts/lib.lua), and a read acquire waits for the turn outside
		// the write side's slot. Nothing was sent with req before.
		sent := op.Request(&h.Base, req, true)
		now := time.Now()
		a, err := m.rw.Read(ctx, h.S.Writer(), sent, held.Held, leaseTTL)
		err = core.AcquireErr(a.OK, err) // a shortfall is undone by leave
		if err != nil {
			return got, acquire.Attempt{}, err
		}
		if a.OK {
			return hold.Got{Acquired: a, Since: now, Held: held}, acquire.Attempt{Acquired: true}, nil
		}
		return got, acquire.Attempt{Hint: a.Wait}, nil
	}
	leave := func(ctx context.Context) error {
		_, _, err := m.rw.Leave(ctx, h.S.RDB, op.Sent(req), false, true)
		return err
	}
	tries := acquire.Funcs[hold.Got]{TryFunc: try, LeaveFunc: leave}
	// A writer's release wakes every waiting reader at once.
	spec := acquire.Spec{Kind: kind, Name: h.Name, Channel: m.rw.Lock.Channel, Mode: acquire.Broadcast, Once: !block}
	r, err := acquire.Acquire(ctx, h.S.Wait(h.MaxPoll()), spec, tries)
	if err != nil {
		return err
	}
	script, keys, args := m.rw.Renewal(false, ttl)
	return h.TookOn(ctx, m.read, lease.Renewal{Script: script, Keys: keys, Args: args},
		scripts.ReadName(op.Sent(req)), r.Got, fixed, tries)
}

// named names the lock in err, after the sentinel's words (see errs.About).
func (m *RWMutex) named(err error) error { return errs.About(kind, m.h.Name, err) }

// cmp returns fixed, or ttl when fixed is 0 (a renewed lease).
func cmp(fixed, ttl time.Duration) time.Duration {
	if fixed > 0 {
		return fixed
	}
	return ttl
}
