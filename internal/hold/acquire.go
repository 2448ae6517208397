package hold

import (
	"context"
	"time"

	"github.com/redcoord/redcoord/internal/acquire"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/scripts"
)

// Kind is what one kind of exclusive lock (rlock, rfairlock, rrwlock's
// writers, relection) adds to the acquire that Acquire runs for all of
// them: how its waiters are woken, and its tries and their undo, made on
// the Attempt that Acquire fills in. A Kind embeds that Attempt.
type Kind interface {
	acquire.Trier[Got]
	attempt() *Attempt
	// Wakes says how the kind's waiters are woken.
	Wakes() Wakes
}

// Wakes is how a kind's waiters are woken: the wait's Mode and channel,
// and for a ClientQueue the waiter registry in which the Client is
// registered once for all its blocked acquires of the name, what that
// registration needs of the kind, and where the kind keeps the acquire's
// part in it (a field of the kind: no allocation of its own; see
// core.ClientWaiter).
type Wakes struct {
	Mode     acquire.Mode
	Channel  string
	Registry string
	Reg      core.Registrant
	Waiter   *core.ClientWaiter
}

// Attempt is what every kind's acquire keeps across its tries: its turn at
// the Tracker, its request id, its lease argument, and where it has them,
// its part in the Client's registration and the heartbeat that keeps its
// waiting entry (a queue's, a writer's) alive.
type Attempt struct {
	H     *Handle
	Op    Op
	Req   string
	Lease scripts.LeaseArg
	Block bool               // wait when the lock is busy (Lock, not TryLock)
	CW    *core.ClientWaiter // nil: the acquire never registers its Client; else Wakes.Waiter
	// Waiting is the waiting entry's heartbeat, made by the first try that
	// finds the lock busy (see Wait) and stopped when the wait ends.
	Waiting *lease.Heartbeat
}

// Acquire takes the lock for k: it checks the handle, the Client and ctx,
// enters the handle's gate (see Tracker.Enter) and runs AcquireInTurn with
// the handle's lease argument. block waits when the lock is busy (Lock);
// without it one try is made, and a busy lock is acquire.ErrBusy (TryLock).
func (h *Handle) Acquire(ctx context.Context, k Kind, fixed time.Duration, block bool) error {
	if err := h.CheckAcquire(ctx); err != nil {
		return err
	}
	e, err := h.Hold.Enter(ctx, block)
	if err != nil {
		return err
	}
	defer e.Exit()
	return h.AcquireInTurn(ctx, k, h.LeaseArg(fixed), fixed, block)
}

// AcquireInTurn is the acquire of every exclusive lock, for a caller that
// has checked the handle and ctx and holds its turn (Acquire, or an
// election's Campaign): it waits for k's tries (see package acquire), with
// the Client registered for k's wakes where k has a registry, and records
// the hold that a try took, with the lease argument l, renewed by the
// watchdog (fixed == 0) or ending after fixed.
func (h *Handle) AcquireInTurn(ctx context.Context, k Kind, l scripts.LeaseArg, fixed time.Duration, block bool) error {
	a := k.attempt()
	*a = Attempt{H: h, Op: Op{t: h.Hold}, Req: h.NextRequest(), Lease: l, Block: block}
	w := k.Wakes()
	defer a.Op.Stop()
	spec := acquire.Spec{Kind: h.Lock.Kind, Name: h.Name, Channel: w.Channel, Mode: w.Mode, Once: !block}
	switch {
	case w.Mode == acquire.Targeted:
		spec.ID = a.Req
	case block && w.Registry != "":
		cw, err := core.EnterClientWaiter(ctx, w.Waiter, h.S, w.Registry, w.Channel, core.OneHold(), w.Reg)
		if err != nil {
			return err
		}
		a.CW = cw
		defer a.CW.Exit()
		// A new Lock where waiters of this Client are already on the
		// channel queues behind them without a try; a holder re-enters
		// at once.
		spec.Behind = h.Hold.Count() == 0 && a.CW.Counted()
	}
	defer a.StopWaiting() // before the Client's waits are exited
	r, err := acquire.Acquire(ctx, h.S.Wait(h.MaxPoll()), spec, k)
	if err != nil {
		return err
	}
	a.StopWaiting()
	return h.Took(ctx, r.Got, fixed, k)
}

// Wait records that a try sent at sent found the lock busy: a blocking
// acquire's waiting entry is kept alive from then on by a heartbeat of the
// renewal r makes, made the first time.
func (a *Attempt) Wait(sent time.Time, r func() lease.Renewal) error {
	if !a.Block {
		return nil
	}
	if a.Waiting == nil {
		a.Waiting = lease.NewHeartbeat(a.H.S.Watchdog, r())
	}
	return a.Waiting.Watch(sent)
}

// attempt returns a (see Kind).
func (a *Attempt) attempt() *Attempt { return a }

// StopWaiting ends the waiting entry's heartbeat, if one was started: for a
// leave, which takes the entry away.
func (a *Attempt) StopWaiting() {
	if a.Waiting != nil {
		a.Waiting.Stop()
	}
}
