package hold

import (
	"context"
	"time"

	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/scripts"
	"github.com/redcoord/redcoord/internal/wait"
)

// Unfair makes the acquires of one handle on an unfair lock (rlock): every
// try races for the lock hash; a release wakes one registered waiter of
// the name, in its own process.
type Unfair struct {
	H  *Handle
	Ch string // the Client's channel for the name, where its waiters are woken
}

// Acquire takes the lock with a lease renewed by the watchdog (fixed == 0)
// or ending after fixed. block waits when the lock is busy (Lock); without
// it one try is made, and a busy lock is wait.ErrBusy (TryLock). The
// caller has checked the handle, the Client and ctx.
func (u Unfair) Acquire(ctx context.Context, fixed time.Duration, block bool) error {
	h := u.H
	a := &lockAttempt{h: h, op: h.Hold.Op(), req: h.NextRequest(), lease: h.LeaseArg(fixed), reg: scripts.NoRegistry}
	defer a.op.Stop()
	if block && h.S.Woken() {
		a.reg = scripts.Register
		defer a.stopBeat()
	}
	// A registered waiter is woken by its request id, and tries at once. A
	// polling one that does not hold the lock queues behind this Client's
	// waiters instead of overtaking them; a holder re-enters at once.
	spec := wait.Spec{Kind: h.Lock.Kind, Name: h.Name, Channel: u.Ch, Once: !block, Join: h.Hold.Count() == 0}
	if a.reg != scripts.NoRegistry {
		spec.ID = a.req
	}
	r, err := wait.Acquire(ctx, h.S.Wait(h.MaxPoll), spec, a)
	if err != nil {
		return err
	}
	return h.Took(ctx, r.Got, fixed, a)
}

// lockAttempt is one acquire's tries, and the undo of its request. A
// blocking acquire whose Client is woken by pub/sub registers its request
// in the lock's waiter registry when a try finds the lock busy, so that a
// release wakes this Client; a heartbeat keeps the registration alive
// while it waits. The try that takes the lock unregisters the request (see
// scripts.Registry), and Leave does when the acquire fails.
type lockAttempt struct {
	h     *Handle
	op    *Op
	req   string
	lease scripts.Lease
	reg   scripts.Registry
	beat  *lease.Heartbeat // the registration's, once a try registered it
}

// Try sends the acquire script once, in the handle's turn, which an
// acquiring try keeps until the hold is recorded.
func (a *lockAttempt) Try(ctx context.Context, w wait.Wake) (Got, wait.Attempt, error) {
	held, err := a.op.Start(ctx)
	if err != nil {
		return Got{}, wait.Attempt{}, err
	}
	sent := time.Now()
	reg := a.reg
	if reg == scripts.Register && w.Polling {
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
		return Got{}, wait.Attempt{}, err
	case r.OK:
		a.stopBeat() // the script unregistered the request
	case reg == scripts.Register:
		if err := a.registered(sent); err != nil {
			return Got{}, wait.Attempt{}, err
		}
	}
	return Got{Acquired: r, Since: sent, Held: held}, wait.Attempt{Acquired: r.OK, Hint: r.Wait}, nil
}

// registered records that a busy try sent at sent registered the request.
func (a *lockAttempt) registered(sent time.Time) error {
	if a.beat == nil {
		script, keys, args := a.h.Lock.Beat(a.req, a.h.TTL())
		a.beat = lease.NewHeartbeat(a.h.S.Watchdog, lease.Renewal{Script: script, Keys: keys, Args: args})
	}
	return a.beat.Watch(sent)
}

// stopBeat ends the registration's heartbeat, if any.
func (a *lockAttempt) stopBeat() {
	if a.beat != nil {
		a.beat.Stop()
	}
}

// Leave undoes the request if Redis applied it, and unregisters it.
func (a *lockAttempt) Leave(ctx context.Context) error {
	a.stopBeat()
	_, err := a.h.Lock.Leave(ctx, a.h.S.RDB, a.req)
	return err
}
