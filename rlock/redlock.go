package rlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/acquire"
	"github.com/redcoord/redcoord/internal/backoff"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/hold"
	"github.com/redcoord/redcoord/internal/outage"
)

// redLockName names a RedLock in errors.
const redLockName = "rlock.RedLock"

// MaxRedLockInstances is the most Redis servers one RedLock spans.
const MaxRedLockInstances = 16

// RedLock is a lock over several independent Redis servers (not the nodes
// of one Cluster), held while a majority of them hold it: the Redlock
// algorithm. See "RedLock" in the package documentation for what it
// assumes and when a single Redis is the better choice. It is safe for
// concurrent use; a RedLock must not be copied after first use.
type RedLock struct {
	_ noCopy

	err     error
	name    string
	clients []*redcoord.Client
	opts    []Option
	ss      []*core.Session // one per server, of clients
	quorum  int
	poll    time.Duration // the longest back-off between attempts
	c       compound

	// ms has one handle per server, each an owner of its own; a handle is
	// replaced in the handle's turn (see retire in redlock_attempt.go).
	ms []*Mutex

	mu     sync.Mutex    // guards the current hold's
	grants []*Mutex      // servers,
	length time.Duration // lease
	token  uint64        // and largest token,
	stale  []*Mutex      // and the retired handles that may still hold
}

// NewRedLock returns a handle on the lock named name over the Redis
// servers of clients, one Client each. It does no I/O; bad input (no
// Client or more than MaxRedLockInstances, a nil or repeated Client, a bad
// name or option) is reported by every method, as ErrInvalidArgument
// naming it. The options are each server's, as for New;
// WithMaxPollInterval also bounds the back-off between two attempts.
func NewRedLock(clients []*redcoord.Client, name string, opts ...Option) *RedLock {
	rl := &RedLock{name: name, c: newCompound(errs.Tag(redLockName, name))}
	switch {
	case len(clients) == 0:
		rl.err = errs.Invalid("clients", "must not be empty")
		return rl
	case len(clients) > MaxRedLockInstances:
		rl.err = errs.Invalid("clients", "must be at most %d, got %d", MaxRedLockInstances, len(clients))
		return rl
	}
	for i, c := range clients {
		if c == nil {
			rl.err = errs.Invalid("clients", "clients[%d] is nil", i)
			return rl
		}
		if j := slices.Index(clients, c); j < i {
			rl.err = errs.Invalid("clients", "clients[%d] and clients[%d] are the same Client", j, i)
			return rl
		}
	}
	for _, c := range clients {
		m := New(c, name, opts...)
		if m.h.Err != nil {
			rl.err = m.h.Err
			return rl
		}
		rl.ms = append(rl.ms, m)
		rl.ss = append(rl.ss, m.h.S)
	}
	rl.clients, rl.opts = clients, opts
	rl.quorum = len(rl.ms)/2 + 1
	rl.poll = rl.ms[0].h.S.Wait(rl.ms[0].h.MaxPoll()).MaxPoll
	return rl
}

// Name returns the lock's name.
func (rl *RedLock) Name() string { return rl.name }

// Lock blocks until a majority of the servers hold the lock for this
// handle, or ctx is done. Each attempt asks every server at once, each
// bounded by a tenth of the lease (at least 50ms), and succeeds when a
// majority granted it with validity left: the lease less the attempt's
// time and the clock drift allowed (a hundredth of the lease, and 2ms).
// A failed attempt gives back what it got and the next follows after a
// random back-off that doubles from 10ms up to the poll interval. Each
// server's hold is renewed by its Client's watchdog until Unlock. If more
// than a minority of the servers fail, Lock tries again when they were
// unreachable (down, restarting, not answering in time: see "Outages" in
// package redcoord), after a pause that doubles from 50ms up to the poll
// interval; when one refused (holding another primitive's data under the
// name, or its Client closed) it returns at once with an error that
// matches ErrNotAcquired and names their errors. A Lock whose ctx descends
// from the hold's Context re-enters it at once, without I/O; any other Lock
// on a held RedLock waits for its hold to end (released, or lost: Lost is
// closed) first, in this process (see "Sharing a handle" at
// redcoord.Locker). A Lock that ends
// with ctx matches ErrNotAcquired and ctx.Err(), and gives back what it
// got.
func (rl *RedLock) Lock(ctx context.Context) error { return rl.named(rl.acquire(ctx, 0, true)) }

// LockWithLease is Lock with a fixed lease, which no watchdog renews: the
// lock is held for Validity, counted from the attempt that took it; Lost
// closes when a majority's leases may have ended. lease must be at least
// 1ms.
func (rl *RedLock) LockWithLease(ctx context.Context, lease time.Duration) error {
	if err := core.CheckLease("lease", lease); err != nil {
		return rl.named(err)
	}
	return rl.named(rl.acquire(ctx, lease, true))
}

// TryLock makes one attempt, asking every server at once, and reports
// whether a majority granted the lock; if not it gives back what it got:
// (false, nil). A majority of failed servers is an error, as for Lock.
func (rl *RedLock) TryLock(ctx context.Context) (bool, error) {
	ok, err := hold.Tried(rl.acquire(ctx, 0, false))
	return ok, rl.named(err)
}

// TryLockWithLease is TryLock with a fixed lease, as LockWithLease.
func (rl *RedLock) TryLockWithLease(ctx context.Context, lease time.Duration) (bool, error) {
	if err := core.CheckLease("lease", lease); err != nil {
		return false, rl.named(err)
	}
	ok, err := hold.Tried(rl.acquire(ctx, lease, false))
	return ok, rl.named(err)
}

// Extend gives the lock on every server that granted it a fixed lease that
// ends lease (at least 1ms) from now, all at once: the watchdogs no longer
// renew them, and Validity runs down from lease. It fails unless a
// majority extended it (ErrLeaseLost when the lock was lost). A RedLock
// that holds nothing gets ErrNotHeld.
func (rl *RedLock) Extend(ctx context.Context, lease time.Duration) error {
	if err := core.CheckLease("lease", lease); err != nil {
		return rl.named(err)
	}
	grants := func() []*Mutex {
		rl.mu.Lock()
		defer rl.mu.Unlock()
		return rl.grants
	}
	return rl.named(rl.c.extend(ctx, rl.check, grants, rl.quorum, lease, func() {
		rl.mu.Lock()
		rl.length = lease
		rl.mu.Unlock()
	}))
}

func (rl *RedLock) acquire(ctx context.Context, fixed time.Duration, block bool) error {
	return retaking(block, func() error { return rl.take(ctx, fixed, block) })
}

// take is one acquire, from the gate to a hold or a failure.
func (rl *RedLock) take(ctx context.Context, fixed time.Duration, block bool) error {
	reentered, e, op, err := rl.c.start(ctx, rl.check, rl.err, block)
	if err != nil {
		return err
	}
	defer op.Stop()
	defer e.Exit()
	if reentered {
		return nil
	}
	// An attempt that no majority granted: tried again after a jittered
	// pause that doubles from 10ms up to the poll interval.
	busy := backoff.Backoff{First: 10 * time.Millisecond, Max: rl.poll, Rand: rl.ss[0].Rand}
	// A majority of servers unreachable: tried again, as a blocked
	// Mutex.Lock does, with a back-off of its own.
	r := outage.Retry{Kind: "redlock", Name: rl.name, MaxPoll: rl.poll,
		Logger: rl.ss[0].Config.Logger, Observe: rl.ss[0].Config.Observer, Rand: rl.ss[0].Jitter}
	for {
		ok, down, err := rl.attempt(ctx, fixed)
		switch {
		case err != nil && block && ctx.Err() != nil && r.Failing():
			return &errs.Error{Sentinel: errs.ErrNotAcquired, Of: rl.c.what, Cause: r.Ended(ctx.Err())}
		case err != nil && block && down:
			if err := r.Failed(ctx, err); err != nil {
				return &errs.Error{Sentinel: errs.ErrNotAcquired, Of: rl.c.what, Cause: err}
			}
			continue
		case err != nil:
			return err
		case ok:
			return nil
		case !block:
			return acquire.ErrBusy
		}
		r.Ok()
		if err := backoff.Sleep(ctx, busy.Next(), nil); err != nil {
			return &errs.Error{Sentinel: errs.ErrNotAcquired, Of: rl.c.what, Cause: err}
		}
	}
}

// lease returns the length of a hold: fixed, or the shortest lease TTL of
// the servers' Clients.
func (rl *RedLock) lease(fixed time.Duration) time.Duration {
	if fixed > 0 {
		return fixed
	}
	l := rl.ss[0].Config.TTL
	for _, s := range rl.ss[1:] {
		l = min(l, s.Config.TTL)
	}
	return l
}

// held records a fresh hold by the servers of granted, of lease length.
func (rl *RedLock) held(granted []*Mutex, length time.Duration) error {
	var token uint64
	for _, m := range granted {
		token = max(token, m.Token())
	}
	rl.mu.Lock()
	rl.grants, rl.length, rl.token = granted, length, token
	rl.mu.Unlock()
	return rl.c.held(granted, rl.quorum, true)
}

// Unlock releases one hold; the last releases the lock on every server
// that granted it, all at once, each waking a waiter of its own. A RedLock
// that holds nothing gets ErrNotHeld. A done ctx does not stop Unlock (see
// "Releases" in package redcoord). If a server's release fails, Unlock
// returns the failures, and the hold has ended when it returns all the
// same: its contexts are done and Lost is closed. That server's grant is
// no longer renewed and ends with its lease, unless Unlock again releases
// it. If the lock was lost before Unlock (fewer than a majority held it),
// Unlock releases what is left and returns ErrLeaseLost, matching
// ErrNotHeld too. A server whose Client is closed is left to its lease.
func (rl *RedLock) Unlock(ctx context.Context) error {
	if err := rl.check(context.Background()); err != nil {
		return rl.named(err)
	}
	ctx, cancel := releaseContext(ctx, rl.ms)
	defer cancel()
	last, err := rl.c.release(ctx)
	if errors.Is(err, errs.ErrNotHeld) {
		rl.sweep(ctx)
	}
	if err != nil || !last {
		return rl.named(err)
	}
	lost := rl.c.Lost()
	rl.mu.Lock()
	grants := rl.grants
	rl.mu.Unlock()

	errList := make([]error, len(grants))
	var wg sync.WaitGroup
	for i, m := range grants {
		wg.Go(func() { _, errList[i] = releaseFully(ctx, m, true) })
	}
	wg.Wait()
	var left []*Mutex
	var failed []error
	for i, err := range errList {
		if err != nil {
			// Still held, and released by Unlock again; its outcome is
			// unknown, so later attempts ask the server with a fresh handle.
			rl.retire(grants[i])
			left = append(left, grants[i])
			failed = append(failed, &errs.Error{Op: fmt.Sprintf("clients[%d]", rl.server(grants[i])), Cause: err})
		}
	}
	rl.mu.Lock()
	rl.grants = left
	rl.mu.Unlock()
	rl.c.ended(len(left) == 0, false)
	switch {
	case len(left) > 0:
		return rl.named(&errs.Error{Detail: fmt.Sprintf("%d of the %d servers that granted it did not release it "+
			"(call Unlock again to release them)", len(left), len(grants)), Cause: errs.Join(failed...)})
	case hold.Closed(lost):
		return errs.Lost(rl.c.what, "the hold ended before Unlock "+
			"(fewer than %d of %d servers held it, or an Unlock failed to release it on one)",
			rl.quorum, len(rl.ms))
	}
	return nil
}

// Validity returns how long the current hold stays valid by this process's
// clock, unless renewed: until fewer than a majority of the servers' leases
// may still run, less the clock drift allowed; 0 when the RedLock holds
// nothing. With Lock, the watchdog renews every server's lease, so it
// stays about a lease TTL; with LockWithLease it runs down from the lease
// less the attempt's time.
func (rl *RedLock) Validity() time.Duration {
	rl.mu.Lock()
	grants, length := rl.grants, rl.length
	rl.mu.Unlock()
	var deadlines []time.Time
	for _, m := range grants {
		if d, ok := m.h.Hold.Deadline(); ok {
			deadlines = append(deadlines, d)
		}
	}
	if len(deadlines) < rl.quorum {
		return 0
	}
	slices.SortFunc(deadlines, func(a, b time.Time) int { return b.Compare(a) })
	return max(0, time.Until(deadlines[rl.quorum-1])-drift(length))
}

// Token returns the largest of the fencing tokens that the servers which
// granted the current hold gave it, 0 when the RedLock holds nothing. See
// "RedLock" in the package documentation for what it guarantees: less
// than a single server's token does.
func (rl *RedLock) Token() uint64 {
	if !rl.c.holding() {
		return 0
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return rl.token
}

// Lost returns a channel that is closed when fewer than a majority of the
// servers that granted the latest hold may still hold it (each server's
// hold found gone, or its Client closed), or an Unlock failed to release
// it on one. It stays open when the hold is released by Unlock. Take it
// after Lock returns; before the first hold it never closes.
func (rl *RedLock) Lost() <-chan struct{} { return rl.c.Lost() }

// Context returns a copy of parent that is cancelled when the current hold
// ends, so that the work it guards stops with it: when fewer than a
// majority may still hold it, or the last Unlock fails to release it on a
// server (the cause matches ErrLeaseLost), or the last Unlock releases it
// (ErrNotHeld), before that call returns; at once, with ErrNotHeld, when
// the RedLock holds nothing. A Lock with it re-enters the hold (see
// Context at redcoord.Locker). Call the CancelFunc when the work is done.
func (rl *RedLock) Context(parent context.Context) (context.Context, context.CancelFunc) {
	return rl.c.Context(parent)
}

// named names the lock in err, after the sentinel's words (see
// errs.About).
func (rl *RedLock) named(err error) error { return errs.Named(rl.c.what, err) }

// check returns the first reason an operation must not start: a bad
// argument to NewRedLock, a done ctx, or fewer than a majority of the
// Clients open (a closed one's server counts as failed).
func (rl *RedLock) check(ctx context.Context) error {
	if rl.err != nil {
		return rl.err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	open := 0
	var closed error
	for _, s := range rl.ss {
		if err := s.Err(); err != nil {
			closed = err
		} else {
			open++
		}
	}
	if open < rl.quorum {
		return errs.New(closed, "%d of %d Clients are closed", len(rl.ms)-open, len(rl.ms))
	}
	return nil
}
