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
	a := &lockAttempt{h: h, ch: u.Ch, op: Op{t: h.Hold}, req: h.NextRequest(), lease: h.LeaseArg(fixed), reg: scripts.NoRegistry}
	defer a.op.Stop()
	if block && h.S.Woken() {
		a.reg = scripts.Register
		a.wait = h.S.Waits.Enter(h.Lock.Waiters)
		defer a.exit()
	}
	// The Client is registered once for all its waiters of the name, and a
	// release wakes its longest-waiting one. A new Lock where waiters of
	// this Client are already on the channel queues behind them without a
	// try; a holder re-enters at once.
	spec := wait.Spec{Kind: h.Lock.Kind, Name: h.Name, Channel: u.Ch, Once: !block, Join: h.Hold.Count() == 0,
		Early: a.wait != nil}
	r, err := wait.Acquire(ctx, h.S.Wait(h.MaxPoll), spec, a)
	if err != nil {
		return err
	}
	return h.Took(ctx, r.Got, fixed, a)
}

// lockAttempt is one acquire's tries, and the undo of its request. A
// blocking acquire whose Client is woken by pub/sub registers its Client
// (once for all its local waiters of the name, see core.Waits) in the
// lock's waiter registry when a try finds the lock busy, so that a
// release wakes this Client; a heartbeat keeps the registration alive
// while any of them waits. The try that takes the lock unregisters the
// Client when no other local waiter remains, and keeps it registered
// otherwise (see scripts.Registry); Leave likewise.
type lockAttempt struct {
	h     *Handle
	ch    string // the Client's channel for the name (Unfair.Ch)
	op    Op     // its turn at the Tracker, kept in the attempt: no allocation of its own
	req   string
	lease scripts.Lease
	reg   scripts.Registry
	wait  *core.Wait // the Client's waiters of the name, when it registers
	// dropped: the last try sent took the lock and dropped the Client's
	// registration (no other local waiter then).
	dropped bool
}

// Try sends the acquire script once, in the handle's turn, which an
// acquiring try keeps until the hold is recorded.
func (a *lockAttempt) Try(ctx context.Context, w wait.Wake) (Got, wait.Attempt, error) {
	held, err := a.op.Start(ctx)
	if err != nil {
		return Got{}, wait.Attempt{}, err
	}
	a.req = a.op.Request(&a.h.Base, a.req, held.Held)
	sent := time.Now()
	reg := a.reg
	switch {
	case reg != scripts.Register:
	case w.Polling:
		// Its wait cannot hear a wake: a registration would only spend a
		// release's wake, so the one an earlier try made goes.
		reg = scripts.Unregister
	case a.wait.Others():
		reg = scripts.Keep
	}
	r, err := a.h.Lock.Acquire(ctx, a.h.S.Writer(), a.req, held.Arg, a.lease, reg)
	err = core.AcquireErr(r.OK, err) // a shortfall is undone by Leave
	if err != nil || !r.OK {
		a.op.Stop()
	}
	a.dropped = err == nil && r.OK && reg == scripts.Register
	if err != nil {
		return Got{}, wait.Attempt{}, err
	}
	if reg == scripts.Keep || (reg == scripts.Register && !r.OK) {
		if err := a.registered(sent); err != nil {
			return Got{}, wait.Attempt{}, err
		}
	}
	return Got{Acquired: r, Since: sent, Held: held}, wait.Attempt{Acquired: r.OK, Hint: r.Wait}, nil
}

// registered records that a try sent at sent registered the Client.
func (a *lockAttempt) registered(sent time.Time) error {
	return a.wait.Registered(sent, func() *lease.Heartbeat {
		script, keys, args := a.h.Lock.Beat(a.h.S.ID, a.h.TTL())
		return lease.NewHeartbeat(a.h.S.Watchdog, lease.Renewal{Script: script, Keys: keys, Args: args})
	})
}

// exit ends the acquire's part in the Client's waits on the name. When
// its try or its leave dropped the registration while other local waiters
// came in meanwhile (they queued without a try), it wakes the
// longest-waiting of them on the Client's channel, whose try registers
// the Client again.
func (a *lockAttempt) exit() {
	if !a.wait.Exit() || !a.dropped {
		return
	}
	if hb, err := a.h.S.Hub(); err == nil && hb != nil {
		hb.WakeOne(a.ch)
	}
}

// Leave undoes the request if Redis applied it. The Client leaves the
// registry unless other local waiters remain.
func (a *lockAttempt) Leave(ctx context.Context) error {
	keep := a.wait == nil || a.wait.Others()
	a.dropped = !keep
	_, wake, err := a.h.Lock.Leave(ctx, a.h.S.RDB, a.req, keep)
	a.h.HandOn(a.ch, wake)
	return err
}
