package rlock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/acquire"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/hold"
	"github.com/redcoord/redcoord/internal/hub"
	"github.com/redcoord/redcoord/internal/outage"
	"github.com/redcoord/redcoord/internal/scripts"
)

// MaxMultiNames is the most names one MultiMutex locks.
const MaxMultiNames = 64

// MultiMutex is a handle on the locks of several names, taken all or none:
// a transfer between two accounts, stock moved between two warehouses.
// Each name's lock is an rlock lock (a Mutex of that name excludes it and
// is excluded by it), held by a handle of the MultiMutex's own. It is safe
// for concurrent use; a MultiMutex must not be copied after first use.
type MultiMutex struct {
	_ noCopy

	err    error
	s      *core.Session
	ms     []*Mutex   // one per name, in lock order (see NewMulti)
	groups [][]*Mutex // consecutive runs of ms, each taken by one script
	c      compound
}

// multiName names a MultiMutex in errors.
const multiName = "rlock.MultiMutex"

// NewMulti returns a handle on the locks of names. It does no I/O; bad
// input (a nil Client, no names, more than MaxMultiNames, a bad or
// repeated name, a bad option) is reported by every method, as
// ErrInvalidArgument naming it. The options are each name's, as for New.
//
// The names are locked in one order, the same for every MultiMutex: by
// their Redis Cluster slot, then by name. Names that share a slot (on a
// single server or through Sentinel: all of them) are taken by one script,
// all or none; on a Cluster each slot's names are taken in turn, holding
// the earlier slots' meanwhile.
func NewMulti(c *redcoord.Client, names []string, opts ...Option) *MultiMutex {
	mm := &MultiMutex{c: newCompound(errs.TagNames(multiName, names))}
	switch {
	case c == nil:
		mm.err = errs.Invalid("c", "nil *redcoord.Client")
		return mm
	case len(names) == 0:
		mm.err = errs.Invalid("names", "must not be empty")
		return mm
	case len(names) > MaxMultiNames:
		mm.err = errs.Invalid("names", "must be at most %d, got %d", MaxMultiNames, len(names))
		return mm
	}
	seen := make(map[string]bool, len(names))
	for i, name := range names {
		if err := core.CheckNamed(fmt.Sprintf("names[%d]", i), name); err != nil {
			mm.err = err
			return mm
		}
		if seen[name] {
			mm.err = errs.Invalid("names", "%q appears more than once", name)
			return mm
		}
		seen[name] = true
	}
	for _, name := range names {
		m := New(c, name, opts...)
		if m.h.Err != nil {
			mm.err = m.h.Err
			return mm
		}
		mm.ms = append(mm.ms, m)
	}
	mm.s = mm.ms[0].h.S
	slot := func(m *Mutex) int { return hub.KeySlot(m.h.Lock.Hash) }
	slices.SortFunc(mm.ms, func(a, b *Mutex) int {
		return cmp.Or(cmp.Compare(slot(a), slot(b)), cmp.Compare(a.h.Name, b.h.Name))
	})
	if !mm.s.Cluster() {
		mm.groups = [][]*Mutex{mm.ms}
		return mm
	}
	for i := 0; i < len(mm.ms); {
		j := i + 1
		for j < len(mm.ms) && slot(mm.ms[j]) == slot(mm.ms[i]) {
			j++
		}
		mm.groups = append(mm.groups, mm.ms[i:j])
		i = j
	}
	return mm
}

// Names returns the names, in the order they are locked.
func (mm *MultiMutex) Names() []string {
	out := make([]string, len(mm.ms))
	for i, m := range mm.ms {
		out[i] = m.h.Name
	}
	return out
}

// Lock blocks until it holds every name's lock, or ctx is done. Names in
// one slot are taken in one round trip when they are free. When one is
// held by another owner, Lock keeps the names before it in lock order,
// lets go of those after it, and waits for that one as Mutex.Lock does
// (woken by its release, in its own process), then tries the rest again:
// two MultiMutexes over overlapping names never wait for each other in a
// circle. Each hold's lease is the Client's lease TTL, renewed by the
// watchdog until Unlock. A name taken early that is lost before the last
// is taken (on a Cluster, its slot failed over meanwhile) makes Lock start
// again. A Lock whose ctx descends from the hold's Context re-enters it at
// once, without I/O; any other Lock on a held MultiMutex waits for its hold
// to end (released, or lost: Lost is closed) first, in this process (see
// "Sharing a handle" at redcoord.Locker). A Lock that fails or ends with ctx
// (an error matching ErrNotAcquired and ctx.Err()) releases what it took
// and leaves Redis as it was.
func (mm *MultiMutex) Lock(ctx context.Context) error { return mm.named(mm.acquire(ctx, 0, true)) }

// LockWithLease is Lock with a fixed lease for every name, which the
// watchdog does not renew: the holds end at Unlock or when lease runs out;
// Lost is closed then. Each name's lease runs from when that name was
// taken: a name waited for alone while others were busy runs from then,
// so the first to end closes Lost. A re-entry keeps the first hold's
// leases. lease must be at least 1ms.
func (mm *MultiMutex) LockWithLease(ctx context.Context, lease time.Duration) error {
	if err := core.CheckLease("lease", lease); err != nil {
		return mm.named(err)
	}
	return mm.named(mm.acquire(ctx, lease, true))
}

// TryLock tries once, without waiting, and reports whether it holds every
// name's lock: one round trip per slot. If any name is held by another
// owner it takes none: (false, nil).
func (mm *MultiMutex) TryLock(ctx context.Context) (bool, error) {
	ok, err := hold.Tried(mm.acquire(ctx, 0, false))
	return ok, mm.named(err)
}

// TryLockWithLease is TryLock with a fixed lease, as LockWithLease.
func (mm *MultiMutex) TryLockWithLease(ctx context.Context, lease time.Duration) (bool, error) {
	if err := core.CheckLease("lease", lease); err != nil {
		return false, mm.named(err)
	}
	ok, err := hold.Tried(mm.acquire(ctx, lease, false))
	return ok, mm.named(err)
}

// Extend gives every name's hold a fixed lease that ends lease (at least
// 1ms) from now, one round trip per name: the watchdog no longer renews
// them, and Lost closes when they end. A name whose hold already ended is
// ErrLeaseLost, naming it; the others are extended all the same. A
// MultiMutex that holds nothing gets ErrNotHeld.
func (mm *MultiMutex) Extend(ctx context.Context, lease time.Duration) error {
	if err := core.CheckLease("lease", lease); err != nil {
		return mm.named(err)
	}
	return mm.named(mm.c.extend(ctx, mm.check, func() []*Mutex { return mm.ms }, len(mm.ms), lease, nil))
}

func (mm *MultiMutex) acquire(ctx context.Context, fixed time.Duration, block bool) error {
	return retaking(block, func() error { return mm.take(ctx, fixed, block) })
}

// take is one acquire, from the gate to a hold or a failure.
func (mm *MultiMutex) take(ctx context.Context, fixed time.Duration, block bool) error {
	reentered, e, op, err := mm.c.start(ctx, mm.check, mm.err, block)
	if err != nil {
		return err
	}
	defer op.Stop()
	defer e.Exit()
	if reentered {
		return nil
	}
	cfg := mm.s.Wait(mm.ms[0].h.MaxPoll())
	r := outage.Retry{Kind: kind, Name: mm.ms[0].h.Name, MaxPoll: cfg.MaxPoll, Done: cfg.Done,
		Logger: cfg.Logger, Observe: cfg.Observe, Rand: cfg.Rand}
	for {
		// Holds the names' handles kept from an earlier hold or attempt (a
		// release that failed) are no longer renewed: release them first,
		// so that every name is taken afresh.
		mm.c.sweepLocked(ctx, mm.ms)
		held := make(map[*Mutex]bool, len(mm.ms))
		err = mm.acquireAll(ctx, fixed, block, held)
		if err == nil {
			for _, m := range mm.ms {
				if hold.Closed(m.Lost()) {
					// Lost while the names after it were waited for (on a
					// Cluster: its slot failed over, or its fixed lease
					// ran out): start again.
					err = errRetake
					break
				}
			}
		}
		if err == nil {
			if err = mm.c.held(mm.ms, len(mm.ms), false); err == nil {
				return nil
			}
		}
		// Give back what was taken, latest first. A release that fails
		// leaves its hold with its name's handle, no longer renewed: the
		// next attempt, Lock or Unlock releases it.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), acquire.LeaveTimeout)
		for i := len(mm.ms) - 1; i >= 0; i-- {
			if held[mm.ms[i]] {
				_, _ = releaseFully(rctx, mm.ms[i], true)
			}
		}
		cancel()
		switch {
		case block && ctx.Err() != nil && r.Failing():
			return errs.Both(errs.ErrNotAcquired, r.Ended(ctx.Err()))
		case block && ctx.Err() == nil && outage.Transient(err):
			// Redis is unreachable: try again, as a blocked Mutex.Lock does.
			if err := r.Failed(ctx, err); err != nil {
				return errs.Both(errs.ErrNotAcquired, err)
			}
			continue
		case err != errRetake:
			return err
		case !block:
			return acquire.ErrBusy
		}
		r.Ok()
	}
}

// errRetake says that a name taken earlier in an acquire was lost before
// it ended: the acquire starts again.
var errRetake = errors.New("rlock: a name was lost during the acquire")

// acquireAll takes every group in turn, recording in held each name taken.
func (mm *MultiMutex) acquireAll(ctx context.Context, fixed time.Duration, block bool, held map[*Mutex]bool) error {
	for _, g := range mm.groups {
		for {
			busy, err := mm.tryGroup(ctx, g, fixed, held)
			if err != nil || busy < 0 {
				if err != nil {
					return err
				}
				break
			}
			if !block {
				return acquire.ErrBusy
			}
			// Wait for g[busy] holding only names before it in lock order.
			for _, m := range g[busy+1:] {
				if held[m] {
					if _, err := releaseFully(ctx, m, true); err != nil {
						return err // m stays in held: the acquire's clean-up releases it
					}
					delete(held, m)
				}
			}
			if err := g[busy].acquire(ctx, fixed, true); err != nil {
				return err
			}
			held[g[busy]] = true
		}
	}
	return nil
}

// tryGroup sends one script that takes the names of g all or none, in each
// name's turn (see hold.Tracker), and records the holds it took. It
// returns -1 when every name is held, or the index in g of the first name
// another owner holds.
func (mm *MultiMutex) tryGroup(ctx context.Context, g []*Mutex, fixed time.Duration,
	held map[*Mutex]bool) (int, error) {
	ops := make([]*hold.Op, len(g))
	parts := make([]scripts.MultiPart, len(g))
	defer func() {
		for _, op := range ops {
			if op != nil {
				op.Stop()
			}
		}
	}()
	for i, m := range g {
		ops[i] = m.h.Hold.Op()
		b, err := ops[i].Start(ctx)
		if err != nil {
			return 0, err
		}
		parts[i] = scripts.MultiPart{Lock: m.h.Lock, Req: m.h.NextRequest(), Held: b.Arg}
	}
	sent := time.Now()
	r, err := scripts.AcquireMulti(ctx, mm.s.Writer(), kind, parts, g[0].h.LeaseArg(fixed))
	if err = core.AcquireErr(r.OK, err); err != nil {
		// Undo what Redis may have applied; a bad argument or a key of
		// another type was found before any write.
		if !errors.Is(err, errs.ErrWrongType) && !errors.Is(err, errs.ErrInvalidArgument) {
			mm.leave(ctx, g, parts)
		}
		return 0, err
	}
	if !r.OK {
		return r.Busy, nil
	}
	for i, m := range g {
		held[m] = true
		if r.Tokens[i] == 0 {
			continue // held already, by a wait for this name alone
		}
		got := hold.Got{Acquired: scripts.Acquired{OK: true, Token: r.Tokens[i], Count: 1}, Since: sent}
		if err := m.h.Took(ctx, got, fixed, leaver{m, parts[i].Req}); err != nil {
			delete(held, m) // given back by Took, and the rest of g here
			mm.leave(ctx, g[i+1:], parts[i+1:])
			return 0, err
		}
	}
	return -1, nil
}

// leave undoes a group's request on the names of g it may have taken.
func (mm *MultiMutex) leave(ctx context.Context, g []*Mutex, parts []scripts.MultiPart) {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), acquire.LeaveTimeout)
	defer cancel()
	for i, m := range g {
		_, wake, err := m.h.Lock.Leave(lctx, mm.s.RDB, parts[i].Req, true)
		m.h.HandOn(m.ch, wake)
		if err != nil {
			mm.s.Config.Logger.Warn("redcoord: leave after a failed multi-lock", "name", m.h.Name, "err", err)
		}
	}
}

// leaver undoes one name's part of a group's request.
type leaver struct {
	m   *Mutex
	req string
}

func (l leaver) Leave(ctx context.Context) error {
	_, wake, err := l.m.h.Lock.Leave(ctx, l.m.h.S.RDB, l.req, true)
	l.m.h.HandOn(l.m.ch, wake)
	return err
}

// Unlock releases one hold; the last releases every name's lock, each
// waking a waiter of that name, latest in lock order first. A MultiMutex
// that holds nothing gets ErrNotHeld. If any name's hold was lost, Unlock
// releases the others and returns ErrLeaseLost (matching ErrNotHeld too),
// naming it. A done ctx does not stop Unlock (see "Releases" in package
// redcoord). If a name's release fails, Unlock releases the others and
// returns the failure, and the hold has ended when it returns: its
// contexts are done and Lost is closed. That name's hold is no longer
// renewed and ends with its lease, unless Unlock again (or the next Lock)
// releases it.
func (mm *MultiMutex) Unlock(ctx context.Context) error {
	if err := checkOpen(mm.err, mm.ms); err != nil {
		return mm.named(err)
	}
	ctx, cancel := releaseContext(ctx, mm.ms)
	defer cancel()
	last, err := mm.c.release(ctx)
	if errors.Is(err, errs.ErrNotHeld) {
		mm.c.sweep(ctx, mm.ms)
	}
	if err != nil || !last {
		return mm.named(err)
	}
	gone := hold.Closed(mm.c.Lost()) // the hold ended before this call
	var failed, lost []string
	var errList []error
	for i := len(mm.ms) - 1; i >= 0; i-- {
		m := mm.ms[i]
		l, err := releaseFully(ctx, m, true)
		if l {
			lost = append(lost, m.h.Name)
		}
		if err != nil {
			failed = append(failed, m.h.Name)
			errList = append(errList, err)
		}
	}
	mm.c.ended(len(failed) == 0, len(lost) > 0)
	switch {
	case len(failed) > 0:
		return mm.named(&errs.Error{
			Detail: fmt.Sprintf("the locks of %q were not released (call Unlock again to release them)", failed),
			Cause:  errs.Join(errList...)})
	case len(lost) > 0:
		return errs.Lost(mm.c.what, "the locks of %q were lost before Unlock; the others are released", lost)
	case gone:
		return errs.Lost(mm.c.what, "the hold ended before Unlock (a name was lost, or an Unlock failed to release one); "+
			"the names left are released")
	}
	return nil
}

// Tokens returns the fencing token of each name's current hold, by name;
// nil when the MultiMutex holds nothing.
func (mm *MultiMutex) Tokens() map[string]uint64 {
	if !mm.c.holding() {
		return nil
	}
	out := make(map[string]uint64, len(mm.ms))
	for _, m := range mm.ms {
		out[m.h.Name] = m.Token()
	}
	return out
}

// Lost returns a channel that is closed when any name's lock of the
// latest hold is found gone (its lease expired, or it was deleted), or an
// Unlock failed to release one. It stays open when the hold is released
// by Unlock. Take it after Lock returns; before the first hold it never
// closes.
func (mm *MultiMutex) Lost() <-chan struct{} { return mm.c.Lost() }

// Context returns a copy of parent that is cancelled when the current hold
// ends, so that the work it guards stops with it: when any name's hold is
// lost, or the last Unlock fails to release one (the cause matches
// ErrLeaseLost), or the last Unlock releases them (ErrNotHeld), before
// that call returns; at once, with ErrNotHeld, when the MultiMutex holds
// nothing. A Lock with it re-enters the hold (see Context at
// redcoord.Locker). Call the CancelFunc when the work is done.
func (mm *MultiMutex) Context(parent context.Context) (context.Context, context.CancelFunc) {
	return mm.c.Context(parent)
}

// named names the MultiMutex in err, after the sentinel's words (see
// errs.About).
func (mm *MultiMutex) named(err error) error { return errs.Named(mm.c.what, err) }

// check returns the first reason an operation must not start.
func (mm *MultiMutex) check(ctx context.Context) error { return checkAll(ctx, mm.err, mm.ms) }
