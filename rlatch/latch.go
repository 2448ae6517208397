package rlatch

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/acquire"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/hold"
	"github.com/redcoord/redcoord/internal/outage"
	"github.com/redcoord/redcoord/internal/scripts"
)

const kind = "rlatch"

// MaxCount is the largest count a latch may be set to: 2^53-1, the largest
// integer that Redis's Lua holds exactly.
const MaxCount = 1<<53 - 1

// Latch is a handle on a countdown latch named in Redis. It is safe for
// concurrent use; any number of handles, in any processes, may share one
// name. A Latch must not be copied after first use.
type Latch struct {
	_ noCopy

	b    hold.Base
	opts options
	l    scripts.Latch // zero when b.Err is set
}

// New returns a handle on the countdown latch named name. It does no I/O;
// a bad name or option is reported by every method of the handle, as
// ErrInvalidArgument.
func New(c *redcoord.Client, name string, opts ...Option) *Latch {
	l := &Latch{opts: options{spent: DefaultSpentTTL}}
	if l.b.Init(c, name) {
		l.b.Err = core.ApplyOptions(&l.opts, opts)
	}
	if l.b.Err == nil {
		l.l = scripts.Latch{
			Latch: l.b.Key(core.KeyLatch), Done: l.b.Key(core.KeyLatchDone),
			Kind: kind, Publish: l.b.S.PublishCommand(), Channel: l.b.Key(core.ChanLatch),
			Marks: scripts.RequestTTL + 2*l.b.S.Config.Replicas.Timeout, Spent: l.opts.spent,
		}
	}
	return l
}

// Name returns the latch's name.
func (l *Latch) Name() string { return l.b.Name }

// TrySetCount sets the count to n, from 1 to MaxCount, if the latch was
// never set or has reached zero (a spent latch starts a new round), and
// reports whether it did. A latch that is counting keeps its count: false,
// nil. The count's spent TTL is this handle's (WithSpentTTL). One round
// trip; a call that go-redis retries after a lost reply is applied once.
// With redcoord.WithWaitReplicas, a shortfall (ErrNotReplicated) comes
// with the outcome on the primary: true if the count was set there.
func (l *Latch) TrySetCount(ctx context.Context, n int64) (bool, error) {
	if err := l.b.Check(ctx); err != nil {
		return false, l.named(err)
	}
	if n < 1 || n > MaxCount {
		return false, l.named(errs.Invalid("n", "must be from 1 to %d (2^53-1), got %d", int64(MaxCount), n))
	}
	set, _, err := l.l.TrySet(ctx, l.b.S.Writer(), l.b.NextRequest(), n)
	return set, l.named(err)
}

// CountDown counts the latch down by one. The CountDown that brings it to
// zero wakes every waiter, in every process, with one message, and starts
// the spent latch's TTL. At zero it does nothing. A latch never set (or
// deleted, or expired after reaching zero) is ErrNotSet. One round trip; a
// call that go-redis retries after a lost reply counts once, but a call
// retried by hand is a new CountDown: after an error other than ErrNotSet
// it is unknown whether the latch counted, except for ErrNotReplicated
// (redcoord.WithWaitReplicas), which says it counted on the primary.
func (l *Latch) CountDown(ctx context.Context) error {
	if err := l.b.Check(ctx); err != nil {
		return l.named(err)
	}
	_, _, err := l.l.CountDown(ctx, l.b.S.Writer(), l.b.NextRequest())
	if errors.Is(err, errs.ErrNotReplicated) {
		return l.named(errs.Noted(err, "the latch counted down on the primary (do not count down again)"))
	}
	return l.named(l.explain(err))
}

// Count returns how many CountDowns are left: 0 once the latch has opened.
// A latch never set (or deleted, or expired after reaching zero) is
// ErrNotSet.
func (l *Latch) Count(ctx context.Context) (int64, error) {
	if err := l.b.Check(ctx); err != nil {
		return 0, l.named(err)
	}
	st, err := l.l.State(ctx, l.b.S.RDB)
	return st.Count, l.named(l.explain(err))
}

// Wait blocks until the latch's count reaches zero (the round it finds,
// set by the last TrySetCount), or ctx is done. It returns at once for a
// latch at zero, and ErrNotSet at once for one never set (or deleted, or
// expired after reaching zero): a wait could not tell such a latch from a
// misspelt name. With WithWaitForSet it waits for such a latch to be set
// instead, and then for the round set to reach zero. A waiter sleeps on the
// Client's pub/sub Hub and is woken by the CountDown that opens the latch;
// a timer (the poll interval) bounds what a lost message costs. A round
// that opened returns its waiters even if TrySetCount has started the next
// one before they looked; a round that was deleted gives them ErrNotSet. A
// wait that ends with ctx returns an error matching ctx.Err(), and leaves
// nothing behind in Redis.
func (l *Latch) Wait(ctx context.Context) error {
	if err := l.b.Check(ctx); err != nil {
		return l.named(err)
	}
	var round int64 // the round this wait waits for, from its first check
	try := func(ctx context.Context, wake acquire.Wake) (struct{}, acquire.Attempt, error) {
		if round != 0 && wake.Payload == strconv.FormatInt(round, 10) {
			return struct{}{}, acquire.Attempt{Acquired: true}, nil // the message says this round opened
		}
		st, err := l.l.State(ctx, l.b.S.RDB)
		switch {
		case round == 0 && l.opts.waitForSet && errors.Is(err, errs.ErrNotSet):
			return struct{}{}, acquire.Attempt{}, nil // TrySetCount wakes it
		case err != nil:
			return struct{}{}, acquire.Attempt{}, l.explain(err)
		case round == 0 || st.Round == round:
			round = st.Round
			return struct{}{}, acquire.Attempt{Acquired: st.Count == 0}, nil
		case st.Born <= round:
			// A later round began in the same latch: rounds begin only at
			// zero, so this wait's round opened.
			return struct{}{}, acquire.Attempt{Acquired: true}, nil
		}
		return struct{}{}, acquire.Attempt{}, l.explain(errs.ErrNotSet) // deleted or expired, and set again
	}
	// Every waiter has the id "open": the message of the CountDown that
	// opens a round reaches each of them with the round's number, and that
	// of a TrySetCount with "set".
	spec := acquire.Spec{Kind: kind, Name: l.b.Name, Channel: l.l.Channel, Mode: acquire.Broadcast, ID: openID}
	tries := acquire.Funcs[struct{}]{TryFunc: try, LeaveFunc: nothing}
	_, err := acquire.Acquire(ctx, l.b.S.Wait(l.opts.MaxPoll), spec, tries)
	if errors.Is(err, errs.ErrNotAcquired) {
		// The wait loop says what an acquire did not get; a latch's wait
		// says only why it ended: ctx, or a closed Client.
		var down *outage.Error // the wait ended while Redis was unreachable
		switch {
		case errors.As(err, &down):
			return l.named(down)
		case ctx.Err() != nil:
			if cause := context.Cause(ctx); cause != ctx.Err() {
				return l.named(errs.Chain(ctx.Err(), cause))
			}
			return l.named(ctx.Err())
		case errors.Is(err, errs.ErrClosed):
			return l.named(errs.ErrClosed)
		}
	}
	return l.named(err)
}

// openID is every waiter's id on the latch's channel (see latch_down.lua).
const openID = "open"

// nothing is a wait's leave: a waiter leaves nothing in Redis to undo.
func nothing(context.Context) error { return nil }

// Delete deletes the latch. Its waiters are woken and get ErrNotSet; a
// CountDown or Count after it is ErrNotSet, and TrySetCount sets it afresh
// (a new round: the deleted round's waiters still get ErrNotSet). Its
// request markers expire by themselves, so that a call retried across the
// Delete is still applied once. It reports whether the latch existed (a
// Delete that go-redis retried after a lost reply may report false). Use
// it for a latch that is done with before its spent TTL ends, or one that
// will never reach zero.
func (l *Latch) Delete(ctx context.Context) (bool, error) {
	if err := l.b.Check(ctx); err != nil {
		return false, l.named(err)
	}
	ok, err := l.l.Delete(ctx, l.b.S.Writer())
	return ok, l.named(err)
}

// explain says how to set the count in an ErrNotSet.
func (l *Latch) explain(err error) error {
	if err == errs.ErrNotSet {
		return errs.New(errs.ErrNotSet, "its count was never set: call TrySetCount first "+
			"(or the latch was deleted, or reached zero more than its spent TTL ago)")
	}
	return err
}

// named names the latch in err, after the sentinel's words (see
// errs.About).
func (l *Latch) named(err error) error { return errs.About(kind, l.b.Name, err) }

// noCopy lets go vet's copylocks check report copies of a latch.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

// DefaultSpentTTL is how long a latch that reached zero stays, by default:
// waiters that arrive in that time return at once.
const DefaultSpentTTL = time.Hour
