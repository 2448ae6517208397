package rsemaphore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/hold"
	"github.com/redcoord/redcoord/internal/lease"
)

// Permit is one permit acquired from an ExpirableSemaphore.
type Permit struct {
	// ID names the permit in Redis: Release and Extend take it, from any
	// handle on the semaphore.
	ID string
	// Token is the permit's fencing token, strictly increasing across all
	// permits of the name: a storage layer can reject a holder whose permit
	// expired while it was paused.
	Token uint64

	lost <-chan struct{}
}

// Lost returns a channel that is closed when the handle that acquired the
// permit finds it gone before that handle's Release: its fixed lease
// ended, or a renewal found it gone (expired, or released through another
// handle). It stays open after that handle's Release. It is nil for a
// Permit that was not acquired.
func (p Permit) Lost() <-chan struct{} { return p.lost }

// keep starts keeping the permit id, acquired with a lease that started no
// later than since, in a hold.Tracker of its own: a timer marks it lost
// when a fixed lease ends, or the watchdog renews it. It fails only when
// the watchdog is closed.
func (s *ExpirableSemaphore) keep(id string, token uint64, fixed time.Duration, since time.Time) (Permit, error) {
	t := hold.New()
	t.Observe(s.h.S.Config.Observer, expirableKind, s.h.Name)
	script, keys, args := s.x.Renewal(id, s.h.TTL())
	err := t.Took(hold.Belief{}, token, 1, hold.Upkeep{
		Watchdog: s.h.S.Watchdog, Renewal: lease.Renewal{Script: script, Keys: keys, Args: args},
		Fixed: fixed, Since: since,
		OnLost: func() { s.forget(id, t) },
	})
	if err != nil {
		return Permit{}, err
	}
	s.mu.Lock()
	// A permit lost already (a fixed lease that Confirm left little of)
	// was forgotten before it was kept: its OnLost found nothing to forget.
	if t.Count() > 0 {
		s.held[id] = t
	}
	s.mu.Unlock()
	return Permit{ID: id, Token: token, lost: t.Lost()}, nil
}

// kept returns the Tracker this handle keeps the permit id in, or nil.
func (s *ExpirableSemaphore) kept(id string) *hold.Tracker {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held[id]
}

// forget stops keeping the permit id in t: it was released or lost.
func (s *ExpirableSemaphore) forget(id string, t *hold.Tracker) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[id] == t {
		delete(s.held, id)
	}
}

// checkPermit reports a Permit that was never acquired.
func checkPermit(p Permit) error {
	if p.ID == "" {
		return errs.Invalid("p", "a zero Permit: it was not acquired")
	}
	return nil
}

// Release returns the permit, in one round trip, and wakes the local
// waiters it lets in. The watchdog stops renewing it before the request is
// sent. A permit that is not held (unknown, expired, or already released)
// is ErrNotHeld, and ErrLeaseLost (matching ErrNotHeld too) when this
// handle acquired it and its lease ended first; nothing changes then. A
// permit whose Lost had closed is ErrLeaseLost too, even if Redis still
// had it (a fixed lease ends by the local clock a little before Redis
// expires it): it is released all the same. A Release that go-redis
// retries after a lost reply is applied once. A done ctx does not stop
// Release, and one that fails leaves the permit to end with its lease: see
// "Releases" in package redcoord.
func (s *ExpirableSemaphore) Release(ctx context.Context, p Permit) (err error) {
	defer func() { err = s.named(err) }()
	if err := s.h.CheckRelease(); err != nil {
		return err
	}
	if err := checkPermit(p); err != nil {
		return err
	}
	ctx, cancel := s.h.S.ReleaseContext(ctx)
	defer cancel()
	// While acquires of this Client wait on the name, the release hands
	// the permit to one of them, and the script wakes other Clients only
	// with what is left.
	local := s.h.localWaiters(s.x.Waiters)
	self := ""
	if local {
		self = s.h.S.ID
	}
	send := func() (int64, error) {
		ok, own, err := s.x.Release(ctx, s.h.S.Writer(), p.ID, s.h.NextRequest(), self)
		switch {
		case local && ok:
			s.h.handOn(s.clientCh, own, 1)
		case local && err != nil && !errors.Is(err, errs.ErrNotReplicated):
			s.h.failedOn(s.clientCh)
		}
		if !ok {
			return -1, err
		}
		return 0, err
	}
	t := s.kept(p.ID)
	if t == nil { // acquired by another handle, or no longer kept by this one
		n, err := send()
		switch {
		case err != nil && !errors.Is(err, errs.ErrNotReplicated) && isClosed(p.lost):
			// What Redis may still have of it is left to its lease.
			return errs.Lost(s.what(p), "lost before this call (releasing what Redis may still have of it failed: %s)",
				errs.Words(err))
		case err != nil && !errors.Is(err, errs.ErrNotReplicated):
			return err
		case n == 0 && isClosed(p.lost):
			return errs.Lost(s.what(p), "lost before this call (released now)")
		case n < 0:
			return s.notHeld(p)
		}
		return core.ReleaseErr(err)
	}
	what := s.what(p)
	if _, err := t.StartRelease(ctx, what); err != nil {
		return err
	}
	n, err := send()
	err = t.EndRelease(n, err, what)
	if t.Count() == 0 { // released, or lost
		s.forget(p.ID, t)
	}
	return err
}

// what names the permit p in errors.
func (s *ExpirableSemaphore) what(p Permit) string {
	return fmt.Sprintf("%s: permit %s", errs.Tag(expirableName, s.h.Name), p.ID)
}

// isClosed reports whether ch (nil: never) is closed.
func isClosed(ch <-chan struct{}) bool {
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// notHeld is the error for a permit that Redis does not have and this
// handle does not keep: lost, when its Lost has closed.
func (s *ExpirableSemaphore) notHeld(p Permit) error {
	if isClosed(p.lost) {
		return errs.Lost(s.what(p), "gone before this call: its lease ended, or another handle released it")
	}
	return errs.Of(s.what(p), errs.ErrNotHeld, "not held")
}

// Context returns a copy of parent that is cancelled when the permit p,
// which this handle acquired, ends: lost (its lease ran out, or another
// handle released it: the cause matches ErrLeaseLost and names the permit)
// or released by this handle (ErrNotHeld, as the release is sent, see
// Context at redcoord.Locker), before that call returns; at
// once, with ErrNotHeld, for a permit this handle does not keep. Call the
// CancelFunc when the work is done.
func (s *ExpirableSemaphore) Context(parent context.Context, p Permit) (context.Context, context.CancelFunc) {
	if t := s.kept(p.ID); t != nil {
		return t.Context(parent, s.what(p))
	}
	ctx, cancel := context.WithCancelCause(parent)
	cancel(s.notHeld(p))
	return ctx, func() { cancel(context.Canceled) }
}

// Extend gives the permit a fixed lease that ends lease (at least 1ms) from
// now, in one round trip; a permit the watchdog kept is no longer renewed.
// A permit that is not held is ErrNotHeld (ErrLeaseLost when this handle
// acquired it), and nothing changes. With redcoord.WithWaitReplicas, a new
// lease that too few replicas acknowledged stands all the same, and the
// error matches ErrNotReplicated. An Extend that fails otherwise than
// with ErrWrongType (a timeout, a dropped connection) may have set the
// lease: a permit this handle keeps is renewed as before, but its Lost
// closes when that lease would end unless a later Extend succeeds.
func (s *ExpirableSemaphore) Extend(ctx context.Context, p Permit, lease time.Duration) (err error) {
	defer func() { err = s.named(err) }()
	if err := s.h.Check(ctx); err != nil {
		return err
	}
	if err := checkPermit(p); err != nil {
		return err
	}
	if err := core.CheckLease("lease", lease); err != nil {
		return err
	}
	send := func() (bool, error) { return s.x.Extend(ctx, s.h.S.Writer(), s.h.NextRequest(), p.ID, lease) }
	t := s.kept(p.ID)
	if t == nil { // acquired by another handle, or no longer kept by this one
		ok, err := send()
		switch {
		case err != nil && !errors.Is(err, errs.ErrNotReplicated):
			return err
		case !ok:
			return s.notHeld(p)
		case err != nil:
			return errs.Noted(err, "the new lease stands")
		}
		return nil
	}
	err = t.Extend(ctx, s.what(p), lease, send)
	if t.Count() == 0 { // lost
		s.forget(p.ID, t)
	}
	return err
}
