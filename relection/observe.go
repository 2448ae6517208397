package relection

import (
	"context"
	"errors"
	"time"

	"github.com/redcoord/redcoord/internal/acquire"
	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/hub"
	"github.com/redcoord/redcoord/internal/scripts"
)

// observeBatch is how many changes one read of the log returns.
const observeBatch = 32

// Observe returns a channel that receives the election's leaders as they
// change, in the order they changed: first the current leader, then each
// new term, each value a leader proclaims, and each end of a lead that no
// candidate follows, once each. A Leader whose Term is 0 says that nobody
// leads (since Since, when it is known). Every observer of a name receives
// the same sequence. A lead ended by a script is reported at once (a
// Resign, a grant given back by a candidate whose Campaign ended before it
// saw it); one whose lease ran out runs no script, and is reported only by
// the next leader's term, if any: Leader tells whether anyone leads.
//
// Observe subscribes and reads the current leader before it returns (the
// subscription bounded by the poll interval, both by ctx): every change
// made after it returns is delivered. An observer sleeps on the Client's
// pub/sub Hub and reads the election's log when a change is published; a
// timer (the poll interval) bounds what a lost message costs. The log
// keeps at least the latest 128 changes: an observer that falls further
// behind (its reader does not keep up) skips the oldest and goes on from
// the oldest the log still has.
//
// The channel is closed when ctx is done or the Client closes, and at once
// for a handle New could not make (see Leader's error) or a done ctx. A
// read that fails is retried after the poll interval, and logged; a key
// of another type ends the observer (also logged).
func (e *Election) Observe(ctx context.Context) <-chan Leader {
	out := make(chan Leader)
	if err := e.h.Check(ctx); err != nil {
		close(out)
		return out
	}
	o := &observer{e: e, ctx: ctx, cfg: e.h.S.Wait(e.h.MaxPoll()), out: out}
	// Subscribed first, then the start: a change after it wakes the
	// observer, and the log from the start's last entry on holds it.
	if sub := e.subscribe(ctx, o.cfg); sub != nil {
		o.sub, o.wake = sub, sub.C()
	}
	start, err := e.fair.Leader(ctx, e.h.S.RDB)
	if err != nil && !e.retry(ctx, err) {
		o.stop()
		return out
	}
	go o.run(start, err == nil)
	return out
}

// observer is one Observe: it feeds out until ctx is done or the Client
// closes.
type observer struct {
	e    *Election
	ctx  context.Context
	cfg  acquire.Config
	sub  *hub.Subscription // nil: it polls
	wake <-chan struct{}
	out  chan<- Leader
}

// stop ends the observer: its subscription, and the channel.
func (o *observer) stop() {
	if o.sub != nil {
		o.sub.Close()
	}
	close(o.out)
}

// run delivers the leader at start (read already if ok), then every change
// logged after start, as they come.
func (o *observer) run(start scripts.Term, ok bool) {
	defer o.stop()
	e, ctx := o.e, o.ctx
	timer := time.NewTimer(o.cfg.MaxPoll)
	defer timer.Stop()
	last := "" // the last log entry delivered or skipped; "" until the start is read
	for {
		if !ok {
			var err error
			if start, err = e.fair.Leader(ctx, e.h.S.RDB); err != nil && !e.retry(ctx, err) {
				return
			}
			ok = err == nil
		}
		if ok && last == "" {
			last = start.ID
			if !o.send(start) {
				return
			}
		}
		for last != "" {
			changes, err := e.fair.Changes(ctx, e.h.S.RDB, last, observeBatch)
			if err != nil {
				if !e.retry(ctx, err) {
					return
				}
				break
			}
			for _, t := range changes {
				if !o.send(t) {
					return
				}
				last = t.ID
			}
			if len(changes) < observeBatch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-o.cfg.Done:
			return
		case <-o.wake:
		case <-timer.C:
		}
		timer.Reset(o.cfg.MaxPoll)
	}
}

// send delivers t, unless ctx ends or the Client closes first.
func (o *observer) send(t scripts.Term) bool {
	select {
	case o.out <- leaderOf(t):
		return true
	case <-o.ctx.Done():
	case <-o.cfg.Done:
	}
	return false
}

// subscribe returns the observer's subscription to the name's channel, or
// nil to poll: the Client polls, or the Hub could not subscribe within the
// poll interval (it logs why).
func (e *Election) subscribe(ctx context.Context, cfg acquire.Config) *hub.Subscription {
	h, err := cfg.Hub()
	if err != nil || h == nil {
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, cfg.MaxPoll)
	defer cancel()
	sub, err := h.Subscribe(sctx, e.fair.Channel, "")
	if err != nil {
		return nil
	}
	return sub
}

// retry reports whether an observer whose read failed with err goes on (at
// its next wake or poll): not after ctx ended, nor for a key of another
// type or a closed Client.
func (e *Election) retry(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, errs.ErrClosed) {
		return false
	}
	stop := errors.Is(err, errs.ErrWrongType)
	e.h.S.Config.Logger.Warn("relection: observer's read failed", "election", e.h.Name, "err", err, "ends", stop)
	return !stop
}
