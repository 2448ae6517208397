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
	a := &lockAttempt{h: h, ch: u.Ch, op: Op{t: h.Hold}, req: h.NextRequest(), lease: h.LeaseArg(fixed)}
	defer a.op.Stop()
	if block {
		cw, err := EnterClientWait(ctx, &a.client, h.S, h.Lock.Waiters, u.Ch, a)
		if err != nil {
			return err
		}
		a.cw = cw
		defer a.cw.Exit()
	}
	// The Client is registered once for all its waiters of the name, and a
	// release wakes its longest-waiting one. A new Lock where waiters of
	// this Client are already on the channel queues behind them without a
	// try; a holder re-enters at once.
	spec := wait.Spec{Kind: h.Lock.Kind, Name: h.Name, Channel: u.Ch, Once: !block,
		Join: h.Hold.Count() == 0 && a.cw.Counted(), Early: a.cw != nil}
	r, err := wait.Acquire(ctx, h.S.Wait(h.MaxPoll()), spec, a)
	if err != nil {
		return err
	}
	return h.Took(ctx, r.Got, fixed, a)
}

// lockAttempt is one acquire's tries, and the undo of its request. A
// blocking acquire whose Client is woken by pub/sub takes part in its
// Client's one registration in the lock's waiter registry (see
// ClientWait).
type lockAttempt struct {
	h     *Handle
	ch    string // the Client's channel for the name (Unfair.Ch)
	op    Op     // its turn at the Tracker, kept in the attempt: no allocation of its own
	req   string
	lease scripts.Lease
	cw    *ClientWait // nil: the acquire never registers; else &client
	// client is cw's, kept in the attempt: no allocation of its own.
	client ClientWait
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
	reg := a.cw.Mode(w)
	r, err := a.h.Lock.Acquire(ctx, a.h.S.Writer(), a.req, held.Arg, a.lease, reg)
	err = core.AcquireErr(r.OK, err) // a shortfall is undone by Leave
	if err != nil || !r.OK {
		a.op.Stop()
	}
	if err != nil {
		return Got{}, wait.Attempt{}, err
	}
	if err := a.cw.Sent(ctx, reg, sent, r.OK); err != nil {
		return Got{}, wait.Attempt{}, err
	}
	return Got{Acquired: r, Since: sent, Held: held}, wait.Attempt{Acquired: r.OK, Hint: r.Wait}, nil
}

// Beat makes the heartbeat of the Client's registration.
func (a *lockAttempt) Beat() *lease.Heartbeat {
	script, keys, args := a.h.Lock.Beat(a.h.S.ID, a.h.TTL())
	return lease.NewHeartbeat(a.h.S.Watchdog, lease.Renewal{Script: script, Keys: keys, Args: args})
}

// Drop takes the Client out of the registry, by a leave of a request never
// sent (which undoes nothing, so frees nothing to hand on).
func (a *lockAttempt) Drop(ctx context.Context) {
	_, _, _ = a.h.Lock.Leave(ctx, a.h.S.RDB, a.h.NextRequest(), false)
}

// Leave undoes the request if Redis applied it. The Client leaves the
// registry unless other local waiters remain.
func (a *lockAttempt) Leave(ctx context.Context) error {
	_, wake, err := a.h.Lock.Leave(ctx, a.h.S.RDB, a.req, a.cw.Keep())
	a.h.HandOn(a.ch, wake)
	return err
}
