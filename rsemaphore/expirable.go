package rsemaphore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/acquire"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/hold"
	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/scripts"
)

const expirableKind = "rsemaphore-expirable"

// expirableName names an ExpirableSemaphore in errors.
const expirableName = "rsemaphore.ExpirableSemaphore"

// ExpirableSemaphore is a handle on a semaphore named in Redis whose
// permits each have an id, a fencing token and a lease: a permit that is
// not released returns by itself when its lease ends, so permits held by a
// process that dies come back. It is safe for concurrent use.
//
// A permit acquired without a fixed lease is kept alive by the Client's
// watchdog, renewed with every other lease of the Client in one pipelined
// round trip per TTL/3; if the process dies or loses Redis, the permit
// returns within one lease TTL (WithLeaseTTL) of the last renewal.
//
// An ExpirableSemaphore must not be copied after first use.
type ExpirableSemaphore struct {
	_ noCopy

	h        handle
	x        scripts.XSem // zero when h.Err is set
	clientCh string       // the Client's channel for the name, where its waiters are woken
	waiters  registrant   // for the Client's registration (see core.ClientWaiter)

	mu   sync.Mutex               // guards held
	held map[string]*hold.Tracker // permits this handle acquired and is keeping
}

// NewExpirable returns a handle on the expirable semaphore named name. It
// does no I/O; a bad name or option (WithFair included: an expirable
// semaphore serves its waiters unfairly) is reported by every method of the
// handle, as ErrInvalidArgument. A name is either a Semaphore or an
// ExpirableSemaphore: the other kind's scripts report ErrWrongType.
func NewExpirable(c *redcoord.Client, name string, opts ...Option) *ExpirableSemaphore {
	s := &ExpirableSemaphore{held: make(map[string]*hold.Tracker)}
	s.h.init(c, name, opts)
	if s.h.Err == nil && s.h.opts.fair {
		s.h.Err = errs.Invalid("WithFair", "an ExpirableSemaphore serves its waiters unfairly")
	}
	if s.h.Err == nil {
		s.x = scripts.XSem{
			Permits: s.h.Key(core.KeyPermits), Leases: s.h.Key(core.KeySemLeases), Tokens: s.h.Key(core.KeyTokens),
			Fence: s.h.Key(core.KeySemFence), Done: s.h.Key(core.KeyDone), Waiters: s.h.Key(core.KeyXSemWaiters),
			Kind: expirableKind, Publish: s.h.S.PublishCommand(), Channel: s.h.channel(), Marks: s.h.marks(),
		}
		s.clientCh = s.h.clientChannel()
		s.waiters = registrant{h: &s.h, beat: s.x.Beat, unregister: s.unregister}
	}
	return s
}

// Name returns the semaphore's name.
func (s *ExpirableSemaphore) Name() string { return s.h.Name }

// TrySetPermits sets the total number of permits to n, at least 1, if they
// were never set, and reports whether it did.
func (s *ExpirableSemaphore) TrySetPermits(ctx context.Context, n int64) (bool, error) {
	ok, err := s.h.trySet(ctx, s.x.Set, n)
	return ok, s.named(err)
}

// SetPermits sets the total number of permits to n, at least 1, whether or
// not they were set. Permits held stay held until released or expired.
func (s *ExpirableSemaphore) SetPermits(ctx context.Context, n int64) error {
	return s.named(s.h.set(ctx, s.x.Set, n))
}

// AddPermits adds delta (not 0; below 0 to remove permits) to the total;
// permits never set count as 0. A delta that would make the total negative
// is ErrInvalidArgument and changes nothing.
func (s *ExpirableSemaphore) AddPermits(ctx context.Context, delta int64) error {
	return s.named(s.h.add(ctx, s.x.Set, delta))
}

// AcquireOptions are the options of one acquire.
type AcquireOptions struct {
	// Lease, when > 0 (at least 1ms), is a fixed lease: the permit returns
	// when it ends unless Release or Extend comes first, and the watchdog
	// does not renew it. 0 means the watchdog keeps the permit until
	// Release.
	Lease time.Duration
}

func (o AcquireOptions) check() error {
	if o.Lease != 0 {
		return core.CheckLease("Lease", o.Lease)
	}
	return nil
}

// Acquire blocks until it has taken a permit or ctx is done. With every
// permit held, it sleeps until a release wakes it or the soonest lease ends
// (never longer than the poll interval), whichever is first. A total of 0
// is ErrInvalidArgument and permits never set are ErrNotSet, at once. A
// wait that ends returns an error matching both ErrNotAcquired and
// ctx.Err(), and leaves the permits as they were. With WithWaitForSet, it
// waits for permits never set to be set instead.
func (s *ExpirableSemaphore) Acquire(ctx context.Context, opts AcquireOptions) (p Permit, err error) {
	err = s.h.untilSet(ctx, s.isSet, func() error {
		p, err = s.acquire(ctx, opts, true)
		return err
	})
	return p, s.named(err)
}

// isSet reports whether the permits are set.
func (s *ExpirableSemaphore) isSet(ctx context.Context) (bool, error) {
	st, err := s.x.State(ctx, s.h.S.RDB)
	return st.Set, err
}

// TryAcquire makes one attempt, in one round trip, and never waits: it
// takes a permit if one is free. Busy is (Permit{}, false, nil); a failure
// is (Permit{}, false, err).
func (s *ExpirableSemaphore) TryAcquire(ctx context.Context, opts AcquireOptions) (Permit, bool, error) {
	p, err := s.acquire(ctx, opts, false)
	ok, err := hold.Tried(err)
	return p, ok, s.named(err)
}

func (s *ExpirableSemaphore) acquire(ctx context.Context, opts AcquireOptions, block bool) (Permit, error) {
	h := &s.h
	if err := h.CheckAcquire(ctx); err != nil {
		return Permit{}, err
	}
	if err := opts.check(); err != nil {
		return Permit{}, err
	}
	id := h.NextRequest()
	leaseTTL := opts.Lease
	if leaseTTL == 0 {
		leaseTTL = h.TTL()
	}
	// A blocking acquire of a Client woken by pub/sub waits through the
	// waiter registry, where its Client is registered once for all its
	// blocked acquires of the name (see core.ClientWaits), so that a
	// release wakes this Client; a Client that polls registers nothing.
	ttl := h.TTL()
	var cw *core.ClientWaiter    // the acquire's part in its Client's registration, when it registers
	var client core.ClientWaiter // cw's
	if block {
		var err error
		if cw, err = core.EnterClientWaiter(ctx, &client, h.S, s.x.Waiters, s.clientCh, core.Permits(1),
			&s.waiters); err != nil {
			return Permit{}, err
		}
		defer cw.Exit()
	}
	registered := false // a try that registers the Client was sent for id: a release may have woken it
	// taken is what an acquiring try got: the permit's token, and no later
	// than when its lease started.
	type taken struct {
		token uint64
		since time.Time
	}
	try := func(ctx context.Context, w acquire.Wake) (taken, acquire.Attempt, error) {
		now := time.Now()
		reg, least := cw.ModeBehind(w) // least 1: other acquires of the Client wait; 0: none
		// Applied or not (its reply may be lost), the try may have
		// registered the Client: the leave after a failed wait settles it.
		registered = registered || reg == scripts.Register || reg == scripts.Keep
		a, err := s.x.Acquire(ctx, h.S.Writer(), id, leaseTTL, semWait(reg, least, scripts.SemTry), ttl)
		err = core.AcquireErr(a.OK, err)
		if err == nil {
			if err := cw.Sent(ctx, reg, now, a.OK); err != nil {
				return taken{}, acquire.Attempt{}, err
			}
		}
		switch {
		case errors.Is(err, errs.ErrNotReplicated):
			return taken{}, acquire.Attempt{}, err // a take that too few replicas have: undone by leave
		case err != nil:
			return taken{}, acquire.Attempt{}, notAcquired(h.explain(err))
		}
		if !a.OK {
			return taken{}, acquire.Attempt{Hint: a.Wait}, nil
		}
		return taken{a.Token, now}, acquire.Attempt{Acquired: true}, nil
	}
	leave := func(ctx context.Context) error {
		_, err := s.x.Leave(ctx, h.S.RDB, id, registered, ttl, cw.Leaving())
		return err
	}
	// A release wakes a registered Client's waiters on that Client's
	// channel, as many as permits are free; an Acquire of a Client whose
	// other acquires of the name wait already joins them without a try.
	// A Client that polls (it never registers) tries after every wake.
	spec := acquire.Spec{Kind: expirableKind, Name: s.h.Name, Channel: s.clientCh, Mode: acquire.Broadcast, Once: !block,
		Weight: 1}
	if cw != nil {
		spec.Mode, spec.Behind = acquire.ClientQueue, cw.Least() > 0
	}
	r, err := acquire.Acquire(ctx, h.wait(), spec, acquire.Funcs[taken]{TryFunc: try, LeaveFunc: leave})
	if err != nil {
		return Permit{}, err
	}
	script, keys, args := s.x.Renewal(id, h.TTL())
	since, err := hold.Confirm(ctx, h.S.Writer(), lease.Renewal{Script: script, Keys: keys, Args: args},
		r.Got.since, leaseTTL, opts.Lease > 0)
	var p Permit
	if err == nil {
		p, err = s.keep(id, r.Got.token, opts.Lease, since)
	}
	if err != nil {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), acquire.LeaveTimeout)
		_ = leave(lctx)
		cancel()
	}
	return p, err
}

// unregister takes the Client out of the registry, by a leave of its own
// request req (see registrant).
func (s *ExpirableSemaphore) unregister(ctx context.Context, req string) {
	_, _ = s.x.Leave(ctx, s.h.S.RDB, req, false, s.h.TTL(), 0)
}

// Acquired returns how many permits are held now, by every holder; permits
// whose lease has ended are not counted.
func (s *ExpirableSemaphore) Acquired(ctx context.Context) (int64, error) {
	st, err := s.state(ctx)
	return st.Held, s.named(err)
}

// Available returns how many permits are free now: the total minus those
// held. It is below 0 while the total is under what is held.
func (s *ExpirableSemaphore) Available(ctx context.Context) (int64, error) {
	st, err := s.state(ctx)
	return st.Total - st.Held, s.named(err)
}

func (s *ExpirableSemaphore) state(ctx context.Context) (scripts.XState, error) {
	if err := s.h.Check(ctx); err != nil {
		return scripts.XState{}, err
	}
	st, err := s.x.State(ctx, s.h.S.RDB)
	if err == nil && !st.Set {
		err = s.h.explain(redcoord.ErrNotSet)
	}
	return st, err
}

// named names the semaphore in err, after the sentinel's words (see
// errs.About).
func (s *ExpirableSemaphore) named(err error) error { return errs.About(expirableName, s.h.Name, err) }
