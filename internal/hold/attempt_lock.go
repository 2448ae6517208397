package hold

import (
	"context"
	"time"

	"github.com/redcoord/redcoord/internal/acquire"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/lease"
)

// Unfair is the acquire of one handle on an unfair lock (rlock), a Kind:
// every try races for the lock hash; a release wakes one registered
// waiter of the name, in its own process. A blocking acquire whose Client
// is woken by pub/sub takes part in its Client's one registration in the
// lock's waiter registry (see core.ClientWaiter). Make one per acquire.
type Unfair struct {
	Attempt
	Ch     string            // the Client's channel for the name, where its waiters are woken
	client core.ClientWaiter // the acquire's part in the Client's registration (Wakes.Waiter)
}

// Wakes says that the Client's waiters queue on Ch, woken one at a time.
func (a *Unfair) Wakes() Wakes {
	return Wakes{Mode: acquire.ClientQueue, Channel: a.Ch, Registry: a.H.Lock.Waiters, Reg: a, Waiter: &a.client}
}

// Try sends the acquire script once, in the handle's turn, which an
// acquiring try keeps until the hold is recorded.
func (a *Unfair) Try(ctx context.Context, w acquire.Wake) (Got, acquire.Attempt, error) {
	held, err := a.Op.Start(ctx)
	if err != nil {
		return Got{}, acquire.Attempt{}, err
	}
	a.Req = a.Op.Request(&a.H.Base, a.Req, held.Held)
	sent := time.Now()
	reg := a.CW.Mode(w)
	r, err := a.H.Lock.Acquire(ctx, a.H.S.Writer(), a.Req, held.Arg, a.Lease, reg)
	err = core.AcquireErr(r.OK, err) // a shortfall is undone by Leave
	if err != nil || !r.OK {
		a.Op.Stop()
	}
	if err != nil {
		return Got{}, acquire.Attempt{}, err
	}
	if err := a.CW.Sent(ctx, reg, sent, r.OK); err != nil {
		return Got{}, acquire.Attempt{}, err
	}
	return Got{Acquired: r, Since: sent, Held: held}, acquire.Attempt{Acquired: r.OK, Hint: r.Wait}, nil
}

// Beat makes the heartbeat of the Client's registration.
func (a *Unfair) Beat() *lease.Heartbeat {
	script, keys, args := a.H.Lock.Beat(a.H.S.ID, a.H.TTL())
	return lease.NewHeartbeat(a.H.S.Watchdog, lease.Renewal{Script: script, Keys: keys, Args: args})
}

// Drop takes the Client out of the registry, by a leave of a request never
// sent (which undoes nothing, so frees nothing to hand on).
func (a *Unfair) Drop(ctx context.Context) {
	_, _, _ = a.H.Lock.Leave(ctx, a.H.S.RDB, a.H.NextRequest(), false)
}

// Leave undoes the request if Redis applied it. The Client leaves the
// registry unless other local waiters remain.
func (a *Unfair) Leave(ctx context.Context) error {
	_, wake, err := a.H.Lock.Leave(ctx, a.H.S.RDB, a.Req, a.CW.Leaving() != 0)
	a.H.HandOn(a.Ch, wake)
	return err
}
