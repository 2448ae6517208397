package rsemaphore

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/acquire"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/hold"
	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/scripts"
)

const kind = "rsemaphore"

// Semaphore is a handle on a counting semaphore named in Redis: a number of
// permits that any handle, in any process, may acquire and release. Permits
// have no owner and no lease (see ExpirableSemaphore for both): a handle
// may release permits another one acquired, and permits held by a process
// that dies are not returned. A Semaphore is safe for concurrent use; its
// goroutines share nothing but the name.
//
// A Semaphore must not be copied after first use.
type Semaphore struct {
	_ noCopy

	h        handle
	sem      scripts.Sem // zero when h.Err is set
	clientCh string      // the Client's channel for the name, where its waiters are woken
	waiters  registrant  // for the Client's registration (see core.ClientWaiter)
}

// New returns a handle on the counting semaphore named name. It does no
// I/O; a bad name or option is reported by every method of the handle, as
// ErrInvalidArgument. The permits are set once, by any handle, with
// TrySetPermits or SetPermits.
func New(c *redcoord.Client, name string, opts ...Option) *Semaphore {
	s := &Semaphore{}
	s.h.init(c, name, opts)
	if s.h.Err == nil {
		s.sem = scripts.Sem{
			Permits: s.h.Key(core.KeyPermits), Queue: s.h.Key(core.KeySemQueue), Alive: s.h.Key(core.KeySemAlive),
			Waiting: s.h.Key(core.KeySemWaiting), Done: s.h.Key(core.KeyDone), Waiters: s.h.Key(core.KeySemWaiters),
			Sizes:   s.h.Key(core.KeySemSizes),
			Drained: s.h.S.KeyTail(name, core.KeyDrained, ""),
			Kind:    kind, Publish: s.h.S.PublishCommand(), Channel: s.h.channel(), Marks: s.h.marks(),
		}
		s.clientCh = s.h.clientChannel()
		s.waiters = registrant{h: &s.h, beat: s.sem.Beat, unregister: s.unregister}
	}
	return s
}

// Name returns the semaphore's name.
func (s *Semaphore) Name() string { return s.h.Name }

// TrySetPermits sets the total number of permits to n, all available, if
// they were never set, and reports whether it did. n must be at least 1.
func (s *Semaphore) TrySetPermits(ctx context.Context, n int64) (bool, error) {
	ok, err := s.h.trySet(ctx, s.sem.Set, n)
	return ok, s.named(err)
}

// SetPermits sets the total number of permits to n, at least 1, whether or
// not they were set. Permits held stay held: available changes by n minus
// the old total, and is below 0 while more are held than the new total
// allows. Waiters that the new permits let in are served.
func (s *Semaphore) SetPermits(ctx context.Context, n int64) error {
	return s.named(s.h.set(ctx, s.sem.Set, n))
}

// AddPermits adds delta (not 0; below 0 to remove permits) to the total and
// to the available permits; permits never set count as 0. A delta that
// would make the total negative is ErrInvalidArgument and changes nothing.
func (s *Semaphore) AddPermits(ctx context.Context, delta int64) error {
	return s.named(s.h.add(ctx, s.sem.Set, delta))
}

// Acquire blocks until it has taken n permits, all at once, or ctx is done.
// n must be at least 1 and at most the total: a request that could never be
// served is ErrInvalidArgument at once, not a wait. Permits never set are
// ErrNotSet at once, for the same reason. A wait that ends returns an error
// matching both ErrNotAcquired and ctx.Err(), and leaves the permits as
// they were: a request that took permits (or was granted them, with
// WithFair) just as the wait ended gives them back. With WithWaitForSet,
// it waits for permits never set to be set instead. While waiters of the
// other kind (WithFair or not) wait on the name, it is ErrInvalidArgument
// and changes nothing (see Fairness in the package documentation).
func (s *Semaphore) Acquire(ctx context.Context, n int64) error {
	return s.named(s.h.untilSet(ctx, s.isSet, func() error { return s.acquire(ctx, n, true) }))
}

// isSet reports whether the permits are set.
func (s *Semaphore) isSet(ctx context.Context) (bool, error) {
	st, err := s.sem.State(ctx, s.h.S.RDB)
	return st.Set, err
}

// TryAcquire makes one attempt, in one round trip, and never waits or
// queues: it takes n permits only if that many are available and no fair
// waiter is queued (who has the first claim on them), and reports whether
// it did. Busy is (false, nil); a failure is (false, err).
func (s *Semaphore) TryAcquire(ctx context.Context, n int64) (bool, error) {
	ok, err := hold.Tried(s.acquire(ctx, n, false))
	return ok, s.named(err)
}

func (s *Semaphore) acquire(ctx context.Context, n int64, block bool) error {
	h := &s.h
	if err := h.CheckAcquire(ctx); err != nil {
		return err
	}
	if err := checkCount("n", n); err != nil {
		return err
	}
	req := h.NextRequest()
	ttl := h.TTL()
	// A blocking acquire waits in the fair queue (WithFair), which grants
	// permits in order, or through the waiter registry, where its Client
	// is registered once for all its blocked acquires of the name (see
	// core.ClientWaits), so that a release whose permits fit one of them
	// wakes this Client; a Client that polls registers nothing.
	mode := scripts.SemTry
	var hb *lease.Heartbeat      // the fair queue entry's
	var cw *core.ClientWaiter    // the acquire's part in its Client's registration, when it registers
	var client core.ClientWaiter // cw's
	switch {
	case block && h.opts.fair:
		mode = scripts.SemQueue
		script, keys, args := s.sem.Heartbeat(req, ttl)
		hb = lease.NewHeartbeat(h.S.Watchdog, lease.Renewal{Script: script, Keys: keys, Args: args})
		defer hb.Stop()
	case block:
		var err error
		if cw, err = core.EnterClientWaiter(ctx, &client, h.S, s.sem.Waiters, s.clientCh, core.Permits(n),
			&s.waiters); err != nil {
			return err
		}
		defer cw.Exit()
		if cw == nil {
			mode = scripts.SemPoll
		}
	}
	queue := mode == scripts.SemQueue
	// granted confirms permits that a release granted to req, announced by
	// a message (see core.Session.Confirm): with WithWaitReplicas, one round
	// trip more, a write of ours with WAIT; without, nothing. The grant
	// itself cannot be taken back but by leave: it is enough that the
	// semaphore is there.
	granted := func(ctx context.Context) (bool, error) {
		return h.S.Confirm(ctx, func(ctx context.Context, w redis.Scripter) (bool, error) {
			return scripts.Touch(ctx, w, s.sem.Permits, "k", kind)
		})
	}
	sent := false      // a try of req was sent
	untouched := false // the only try sent was refused (see Acquire): nothing to undo
	// A counting semaphore's permits have no identity: an acquiring try
	// gets nothing but its success.
	try := func(ctx context.Context, wake acquire.Wake) (struct{}, acquire.Attempt, error) {
		if scripts.ParseSemGrant(wake.Payload) { // granted by a release, after the last try ran
			ok, err := granted(ctx)
			if ok || err != nil {
				return struct{}{}, acquire.Attempt{Acquired: ok}, err
			}
		}
		now := time.Now()
		reg, least := cw.ModeBehind(wake)
		first := !sent
		sent = true
		a, err := s.sem.Acquire(ctx, h.S.Writer(), req, n, semWait(reg, least, mode), ttl)
		untouched = first && scripts.IsSemMixed(err)
		// Permits that a release granted to a queued req are ones this try
		// wrote nothing for: the Writer's WAIT covers them all the same (see
		// core.Session.Writer).
		err = core.AcquireErr(a.OK, err)
		if err == nil {
			if err := cw.Sent(ctx, reg, now, a.OK); err != nil {
				return struct{}{}, acquire.Attempt{}, err
			}
		}
		if err == nil && a.OK {
			if hb != nil {
				hb.Stop() // the queue served it
			}
			return struct{}{}, acquire.Attempt{Acquired: true}, nil
		}
		if errors.Is(err, errs.ErrNotReplicated) {
			return struct{}{}, acquire.Attempt{}, err // undone by leave
		}
		if err != nil {
			return struct{}{}, acquire.Attempt{}, notAcquired(h.explain(err))
		}
		if queue {
			if err := hb.Watch(now); err != nil {
				return struct{}{}, acquire.Attempt{}, err
			}
		}
		return struct{}{}, acquire.Attempt{}, nil // no lease to wait out: a release wakes us, or the poll timer
	}
	// kept: the permits the leave found available for the Client's other
	// blocked acquires, when it kept for them a wake that req may have had
	// (see scripts.SemLeft)
	kept := int64(0)
	leave := func(ctx context.Context) error {
		if hb != nil {
			hb.Stop()
		}
		if untouched {
			return nil
		}
		others := cw.Leaving()
		return untilSent(ctx, func(ctx context.Context) error {
			l, err := s.sem.Leave(ctx, h.S.RDB, req, n, cw != nil, ttl, others)
			kept = l.Kept
			return err
		})
	}
	// A fair request's grant is targeted at it, on this Client's channel;
	// a release wakes a registered Client's waiters that fit on that
	// channel, and an Acquire no smaller than the Client's other blocked
	// ones joins them without a try.
	// A Client that polls (it never registers) tries after every wake.
	spec := acquire.Spec{Kind: kind, Name: s.h.Name, Channel: s.clientCh, Mode: acquire.Broadcast, Once: !block, Weight: n}
	switch {
	case queue:
		spec.Mode, spec.ID = acquire.Targeted, req
	case cw != nil:
		least := cw.Least()
		spec.Mode, spec.Behind = acquire.ClientQueue, least > 0 && n >= least
	}
	_, err := acquire.Acquire(ctx, h.wait(), spec, acquire.Funcs[struct{}]{TryFunc: try, LeaveFunc: leave})
	if kept > 0 {
		// The Client kept a wake for its other blocked acquires: wake those
		// that fit, now that this acquire's subscription is closed (a wake
		// it had not received went on then) and it cannot take one itself.
		h.wakeFree(s.clientCh, kept)
	}
	return err
}

// unregister takes the Client out of the registry, by a leave of its own
// request req (see registrant).
func (s *Semaphore) unregister(ctx context.Context, req string) {
	_, _ = s.sem.Leave(ctx, s.h.S.RDB, req, 1, false, s.h.TTL(), 0)
}

// Release returns n permits (at least 1), in one round trip. They go to the
// fair queue's first waiters that they satisfy, inside the same script, and
// then to waiters whose requests fit in what is available, up to the n
// permits freed: this Client's own, woken here, then other registered
// Clients', each woken in its own process (see "Acquire and release" in
// the package documentation). Releasing more than is held
// (available would exceed the total) is ErrNotHeld and changes nothing. A
// Release that go-redis retries after a lost reply is applied once, and a
// done ctx does not stop it (see "Releases" in package redcoord).
func (s *Semaphore) Release(ctx context.Context, n int64) error {
	if err := s.h.CheckRelease(); err != nil {
		return s.named(err)
	}
	if err := checkCount("n", n); err != nil {
		return s.named(err)
	}
	ctx, cancel := s.h.S.ReleaseContext(ctx)
	defer cancel()
	// While acquires of this Client wait on the name, the release hands
	// its permits to those that fit here, and the script wakes other
	// Clients only with what this Client's fewest leaves.
	local := s.h.localWaiters(s.sem.Waiters)
	self := ""
	if local {
		self = s.h.S.ID
	}
	r, err := s.sem.Release(ctx, s.h.S.Writer(), s.h.NextRequest(), n, self)
	if err != nil && !errors.Is(err, errs.ErrNotReplicated) {
		if local {
			s.h.failedOn(s.clientCh)
		}
		return s.named(s.h.explain(err))
	}
	switch {
	case local && r.Retried:
		s.h.failedOn(s.clientCh) // the first copy's hand-on went with its reply
	case local:
		s.h.handOn(s.clientCh, r.Own, n)
	}
	return s.named(core.ReleaseErr(err))
}

// Available returns the permits available now: the total, minus what is
// held. It is below 0 while SetPermits or AddPermits has shrunk the total
// under what is held. Permits never set are ErrNotSet.
func (s *Semaphore) Available(ctx context.Context) (int64, error) {
	st, err := s.State(ctx)
	if err == nil && !st.Set {
		err = s.h.explain(redcoord.ErrNotSet)
	}
	return st.Available, s.named(err)
}

// Drain takes every available permit, ahead of any queue, and returns how
// many it took (0 when none is available). Give them back with Release.
func (s *Semaphore) Drain(ctx context.Context) (int64, error) {
	if err := s.h.Check(ctx); err != nil {
		return 0, s.named(err)
	}
	n, err := s.sem.Drain(ctx, s.h.S.RDB, s.h.NextRequest())
	return n, s.named(s.h.explain(err))
}

// State is a snapshot of a semaphore.
type State struct {
	Set       bool  // the permits were set; if not, the counts are 0
	Available int64 // permits available (below 0 while the total is under what is held)
	Total     int64 // the total: what was set, plus what was added
	Waiting   int64 // fair waiters queued (WithFair); unfair waiters are not counted
}

// State reads the semaphore, in one round trip.
func (s *Semaphore) State(ctx context.Context) (State, error) {
	if err := s.h.Check(ctx); err != nil {
		return State{}, s.named(err)
	}
	st, err := s.sem.State(ctx, s.h.S.RDB)
	return State{Set: st.Set, Available: st.Available, Total: st.Total, Waiting: st.Waiting}, s.named(err)
}

// notAcquired makes an ErrNotSet from an acquire also match ErrNotAcquired,
// which says what did not happen beside why.
func notAcquired(err error) error {
	if errors.Is(err, redcoord.ErrNotSet) {
		return errs.Both(errs.ErrNotAcquired, err)
	}
	return err
}

// named names the semaphore in err, after the sentinel's words (see
// errs.About).
func (s *Semaphore) named(err error) error { return errs.About(kind, s.h.Name, err) }

// noCopy lets go vet's copylocks check report copies of a semaphore.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}
