package rratelimit

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/obs"
	"github.com/redcoord/redcoord/internal/outage"
	"github.com/redcoord/redcoord/internal/scripts"
)

const kind = "rratelimit"

// Limiter is a handle on a rate limiter named in Redis. It is safe for
// concurrent use; any number of handles, in any processes, may share one
// name, and share its limit (see "The limit" in the package
// documentation). A Limiter must not be copied after first use.
type Limiter struct {
	_ noCopy

	s     *core.Session // nil when err is set by a nil Client
	name  string
	err   error // from New: a bad argument, reported by every method
	limit Limit // the handle's: used where Redis holds none
	opts  options
	r     scripts.Rate
	owner string        // request ids are "<owner>:<seq>"
	seq   atomic.Uint64 // request sequence
}

// New returns a handle on the rate limiter named name, with limit as the
// limit to use where Redis holds none (the first use of the name, or after
// it expired). It does no I/O; a bad name, limit or option is reported by
// every method of the handle, as ErrInvalidArgument naming it.
func New(c *redcoord.Client, name string, limit Limit, opts ...Option) *Limiter {
	l := &Limiter{name: name, limit: limit}
	switch {
	case c == nil:
		l.err = errs.Invalid("c", "nil *redcoord.Client")
		return l
	case core.Of(c) == nil:
		l.err = errs.Invalid("c", "not a Client made by redcoord.New")
		return l
	}
	l.s = core.Of(c)
	if l.err = core.CheckName(name); l.err == nil {
		if l.err = limit.check("limit"); l.err == nil {
			l.err = core.ApplyOptions(&l.opts, opts)
		}
	}
	if l.err == nil {
		l.r = scripts.Rate{Key: l.s.Key(name, core.KeyRate), Done: l.s.Key(name, core.KeyRateDone), Kind: kind}
		l.owner = l.s.NewOwner()
	}
	return l
}

// Name returns the limiter's name.
func (l *Limiter) Name() string { return l.name }

// Result is what Allow and AllowN report.
type Result struct {
	// Allowed says whether the events were admitted (and counted).
	Allowed bool
	// RetryAfter is, when they were not, how long until the same call
	// would admit them, if nobody else takes the room first; 0 when they
	// were.
	RetryAfter time.Duration
	// Remaining is how many events could be admitted at once now, after
	// this call: what is left of the burst.
	Remaining int
	// Limit is the limit in effect: the one stored in Redis.
	Limit Limit
}

// Allow reports whether one event may happen now, and counts it if so.
// See AllowN.
func (l *Limiter) Allow(ctx context.Context) (Result, error) { return l.AllowN(ctx, 1) }

// AllowN reports whether n events may happen now, and counts them if so.
// It never waits: one round trip, whose reply says, when they are not
// admitted, how long until they would be (RetryAfter). Events refused are
// not counted. n must be from 1 to the burst of the limit in effect (more
// could never be admitted): anything else is ErrInvalidArgument, with
// Redis unchanged. When Redis cannot be reached the error matches
// redcoord.ErrNotAcquired, unless the handle was made WithFailOpen.
func (l *Limiter) AllowN(ctx context.Context, n int) (_ Result, err error) {
	defer l.named(&err)
	if err := l.check(ctx, n); err != nil {
		return Result{}, err
	}
	t, err := l.r.Take(ctx, l.s.RDB, l.limit.script(), int64(n), 0, l.nextRequest())
	if err != nil {
		if l.failsOpen(err) {
			l.emit(ctx, obs.RateAdmitted, n, 0, false, err)
			return Result{Allowed: true, Limit: l.limit}, nil
		}
		return Result{}, l.failed(err)
	}
	r := Result{Allowed: t.Taken, Remaining: int(t.Left), Limit: limitOf(t.Limit)}
	switch {
	case t.TooMany:
		return Result{}, l.tooMany(n, t.Limit)
	case t.Taken:
		l.emit(ctx, obs.RateAdmitted, n, 0, false, nil)
	default:
		r.RetryAfter = t.Wait
		l.emit(ctx, obs.RateRefused, n, t.Wait, false, nil)
	}
	return r, nil
}

// Limit returns the limit in effect: the one stored in Redis, or the
// handle's where none is stored.
func (l *Limiter) Limit(ctx context.Context) (_ Limit, err error) {
	defer l.named(&err)
	if err := l.check(ctx, 1); err != nil {
		return Limit{}, err
	}
	st, err := l.r.State(ctx, l.s.RDB, l.limit.script())
	if err != nil {
		return Limit{}, l.failed(err)
	}
	return limitOf(st.Limit), nil
}

// SetLimit stores limit as the limit in effect for every handle on the
// name, in every process, keeping the limiter's state: the events
// admitted lately stay counted against the new limit, so a change admits
// no burst of its own (see "The limit" in the package documentation).
// Waits already reserved keep their times. One round trip.
func (l *Limiter) SetLimit(ctx context.Context, limit Limit) (err error) {
	defer l.named(&err)
	if err := l.check(ctx, 1); err != nil {
		return err
	}
	if err := limit.check("limit"); err != nil {
		return err
	}
	return l.r.Set(ctx, l.s.RDB, limit.script())
}

// check returns the first reason a call must not start: a bad argument to
// New, a bad n, a closed Client, or a done ctx.
func (l *Limiter) check(ctx context.Context, n int) error {
	if l.err != nil {
		return l.err
	}
	if n < 1 || n > MaxEvents {
		return errs.Invalid("n", "must be from 1 to the burst, got %d", n)
	}
	return l.s.Check(ctx)
}

// tooMany is the error of n events above the burst of lim.
func (l *Limiter) tooMany(n int, lim scripts.RateLimit) error {
	return errs.Invalid("n", "%d events are above the burst (%v): they could never be admitted", n, limitOf(lim))
}

// failsOpen reports whether err lets the handle admit: it was made
// WithFailOpen and err says Redis could not be reached or serve.
func (l *Limiter) failsOpen(err error) bool { return l.opts.failOpen && outage.Transient(err) }

// failed is the error of a call that Redis did not answer: it matches
// ErrNotAcquired beside the cause, but for a key of another type.
func (l *Limiter) failed(err error) error {
	if errors.Is(err, errs.ErrWrongType) {
		return err
	}
	return errs.Both(errs.ErrNotAcquired, err)
}

// named makes *err name the limiter (see errs.About).
func (l *Limiter) named(err *error) { *err = errs.About(kind, l.name, *err) }

// nextRequest returns a fresh request id.
func (l *Limiter) nextRequest() string {
	return l.owner + ":" + strconv.FormatUint(l.seq.Add(1), 10)
}

// emit reports an event to the Client's observer, if it has one; slept
// says that a Wait slept (Event.Waited).
func (l *Limiter) emit(ctx context.Context, k obs.Kind, n int, wait time.Duration, slept bool, err error) {
	if f := l.s.Config.Observer; f != nil {
		f(obs.Event{Kind: k, Primitive: kind, Name: l.name, Count: n, Wait: wait, Waited: slept, Err: err, Context: ctx})
	}
}

// noCopy lets go vet's copylocks check report copies of a Limiter.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}
