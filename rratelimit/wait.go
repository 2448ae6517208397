package rratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/obs"
	"github.com/redcoord/redcoord/internal/scripts"
)

// Wait waits until one event may happen. See WaitN.
func (l *Limiter) Wait(ctx context.Context) error { return l.WaitN(ctx, 1) }

// WaitN waits until n events may happen, and counts them. One round trip
// reserves the next slot for n events, in the order the calls reach
// Redis, whatever process they come from; WaitN then sleeps until it and
// returns nil. There is no retry and no message: the reply says when.
//
// If ctx has a deadline that comes before the slot, nothing is reserved
// and WaitN returns at once an error that matches redcoord.ErrNotAcquired
// and context.DeadlineExceeded, and says how long the wait would have
// been. If ctx ends, or the Client
// is closed, while WaitN sleeps, the reservation is given back when no
// later one was made after it (else its slot is left unused: see
// "Waiting" in the package documentation), and the error matches
// redcoord.ErrNotAcquired and ctx.Err() (or redcoord.ErrClosed). n must
// be from 1 to the burst of the limit in effect: anything else is
// ErrInvalidArgument, with Redis unchanged. When Redis cannot be reached
// the error matches redcoord.ErrNotAcquired, unless the handle was made
// WithFailOpen: WaitN then returns nil at once.
func (l *Limiter) WaitN(ctx context.Context, n int) (err error) {
	defer l.named(&err)
	if err := l.check(ctx, n); err != nil {
		return err
	}
	maxWait := time.Duration(-1) // no deadline: any slot
	if dl, ok := ctx.Deadline(); ok {
		maxWait = max(time.Until(dl), 0)
	}
	req := l.nextRequest()
	lim := l.limit.script()
	t, err := l.r.Take(ctx, l.s.RDB, lim, int64(n), maxWait, req)
	switch {
	case err != nil && l.failsOpen(err):
		l.emit(ctx, obs.RateAdmitted, n, 0, false, err)
		return nil
	case err != nil:
		return l.failed(err)
	case t.TooMany:
		return l.tooMany(n, t.Limit)
	case !t.Taken:
		l.emit(ctx, obs.RateRefused, n, t.Wait, false, context.DeadlineExceeded)
		return errs.Both(errs.ErrNotAcquired, fmt.Errorf(
			"%d events need a wait of %v, past the context's deadline (in %v), so nothing was reserved: %w",
			n, t.Wait, maxWait, context.DeadlineExceeded))
	case t.Wait <= 0:
		l.emit(ctx, obs.RateAdmitted, n, 0, false, nil)
		return nil
	}

	start := time.Now()
	timer := time.NewTimer(t.Wait)
	defer timer.Stop()
	var why error
	select {
	case <-timer.C:
		l.emit(ctx, obs.RateWaited, n, t.Wait, true, nil)
		return nil
	case <-ctx.Done():
		why = ctx.Err()
		if cause := context.Cause(ctx); cause != why {
			why = errs.Chain(why, cause)
		}
	case <-l.s.Wait(0).Done:
		why = errs.ErrClosed
	}
	slept := time.Since(start)
	l.emit(ctx, obs.RateRefused, n, slept, true, why)
	given := "left unused (a later wait was reserved after it)"
	if l.giveBack(ctx, lim, req, t.Cost) {
		given = "given back"
	}
	return errs.Both(errs.ErrNotAcquired, &slotError{why: why, slept: slept, wait: t.Wait, given: given})
}

// giveBack gives back the reservation req, which cost cost µs, unless a
// later one was made after it, and reports whether it did. It runs on
// ctx's values without its end, bounded as a release is; a failure leaves
// the slot unused, which admits nothing more, and is logged.
func (l *Limiter) giveBack(ctx context.Context, lim scripts.RateLimit, req string, cost int64) bool {
	bctx, cancel := l.s.ReleaseContext(ctx)
	defer cancel()
	ok, err := l.r.Back(bctx, l.s.RDB, lim, req, cost)
	if err != nil && l.s.Config.Logger != nil {
		l.s.Config.Logger.Warn("redcoord: rate limiter: a cancelled wait could not give its slot back; it is left unused",
			"name", l.name, "err", err)
	}
	return ok
}

// slotError is why a wait for a reserved slot ended (ctx, or a closed
// Client), with how long it waited and what became of the slot:
// "context canceled after waiting 100ms of 1s for its slot: the slot was
// given back".
type slotError struct {
	why         error
	slept, wait time.Duration
	given       string
}

func (e *slotError) Error() string {
	return fmt.Sprintf("%s after waiting %v of %v for its slot: the slot was %s",
		errs.Words(e.why), e.slept, e.wait, e.given)
}

// Unwrap returns why the wait ended.
func (e *slotError) Unwrap() error { return e.why }
