package rsemaphore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/errs"
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

// permit is how a handle keeps one of its permits: renewed by the watchdog
// (lease) or ending with a timer (fixed lease).
type permit struct {
	lost   chan struct{}
	once   sync.Once
	onLost func()
	lease  *lease.Lease // guarded by ExpirableSemaphore.mu, as are timer and ends
	timer  *time.Timer
	ends   time.Time // when timer fires: the end of a fixed lease, less lease.Margin
}

func (k *permit) markLost() { k.once.Do(func() { close(k.lost) }) }

// stopLocked stops renewing and timing the permit; the caller holds the
// semaphore's mu.
func (k *permit) stopLocked() {
	if k.lease != nil {
		k.lease.Remove()
		k.lease = nil
	}
	if k.timer != nil {
		k.timer.Stop()
		k.timer = nil
	}
}

// keep starts keeping the permit id, acquired with a lease that started no
// later than since: a timer marks it lost when a fixed lease ends, or the
// watchdog renews it. It fails only when the watchdog is closed.
func (s *ExpirableSemaphore) keep(id string, token uint64, fixed time.Duration, since time.Time) (Permit, error) {
	k := &permit{lost: make(chan struct{})}
	k.onLost = func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.held[id] == k { // not released (or being released) meanwhile
			delete(s.held, id)
			k.stopLocked()
			k.markLost()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if fixed > 0 {
		k.timeLocked(lossAt(since, fixed))
	} else if err := s.watchLocked(id, k, since); err != nil {
		return Permit{}, err
	}
	s.held[id] = k
	return Permit{ID: id, Token: token, lost: k.lost}, nil
}

// lossAt returns when a fixed lease of length d set no later than since is
// reported lost: at its end less lease.Margin, as the watchdog's leases.
func lossAt(since time.Time, d time.Duration) time.Time {
	return since.Add(d - lease.Margin(d))
}

// timeLocked has k marked lost at ends (see lossAt); the caller holds mu.
func (k *permit) timeLocked(ends time.Time) {
	k.ends = ends
	k.timer = time.AfterFunc(time.Until(ends), k.onLost)
}

// watchLocked makes the watchdog renew the permit id, last set no later
// than since; the caller holds mu.
func (s *ExpirableSemaphore) watchLocked(id string, k *permit, since time.Time) error {
	script, keys, args := s.x.Renewal(id, s.h.s.Config.TTL)
	l, err := s.h.s.Watchdog.Add(lease.Renewal{Script: script, Keys: keys, Args: args}, since, func() {
		// The watchdog has dropped l already; forget it before onLost.
		s.mu.Lock()
		k.lease = nil
		s.mu.Unlock()
		k.onLost()
	})
	if err != nil {
		return err
	}
	k.lease = l
	return nil
}

// drop stops keeping the permit id and returns how it was kept (nil when
// this handle was not keeping it) and undo, which keeps it again as it was:
// renewed from its last renewal, or timed to the end of its fixed lease.
func (s *ExpirableSemaphore) drop(id string) (k *permit, undo func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k = s.held[id]
	if k == nil {
		return nil, func() {}
	}
	var renewed time.Time
	watched := k.lease != nil
	if watched {
		renewed = k.lease.Renewed()
	}
	delete(s.held, id)
	k.stopLocked()
	return k, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.held[id] != nil {
			return
		}
		if watched {
			if s.watchLocked(id, k, renewed) != nil {
				return // the Client is closed: nothing renews anything
			}
		} else {
			k.timeLocked(k.ends)
		}
		s.held[id] = k
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
// retries after a lost reply is applied once. If Release fails for another
// reason, the permit is kept as before: renewed while Redis has it, and
// reported lost once it is gone.
func (s *ExpirableSemaphore) Release(ctx context.Context, p Permit) error {
	if err := s.h.check(ctx); err != nil {
		return err
	}
	if err := checkPermit(p); err != nil {
		return err
	}
	// Once dropped, the permit cannot be marked lost by its lease or timer:
	// it was lost before this call, or it is not lost.
	k, undo := s.drop(p.ID)
	wasLost := isClosed(p.lost)
	w := s.h.s.Writer()
	ok, err := s.x.Release(ctx, w, p.ID, s.h.request())
	switch {
	case err != nil:
		undo()
		return err
	case !ok:
		return s.notHeld(p, k)
	case wasLost:
		return fmt.Errorf("%w: %w: permit %s of %q: lost before this call (released now)", errs.ErrLeaseLost, errs.ErrNotHeld, p.ID, s.h.name)
	}
	return core.AckedRelease(w)
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

// notHeld is the error for a permit that Redis does not have: lost, when
// this handle kept it or saw it lost.
func (s *ExpirableSemaphore) notHeld(p Permit, k *permit) error {
	lost := k != nil
	if k != nil {
		k.markLost()
	} else if p.lost != nil {
		select {
		case <-p.lost:
			lost = true
		default:
		}
	}
	if lost {
		return fmt.Errorf("%w: %w: permit %s of %q: gone before this call: its lease ended, or another handle released it", errs.ErrLeaseLost, errs.ErrNotHeld, p.ID, s.h.name)
	}
	return fmt.Errorf("%w: permit %s of %q is not held", errs.ErrNotHeld, p.ID, s.h.name)
}

// Extend gives the permit a fixed lease that ends lease (at least 1ms) from
// now, in one round trip; a permit the watchdog kept is no longer renewed.
// A permit that is not held is ErrNotHeld (ErrLeaseLost when this handle
// acquired it), and nothing changes. With redcoord.WithWaitReplicas, a new
// lease that too few replicas acknowledged stands all the same, and the
// error matches ErrNotReplicated.
func (s *ExpirableSemaphore) Extend(ctx context.Context, p Permit, lease time.Duration) error {
	if err := s.h.check(ctx); err != nil {
		return err
	}
	if err := checkPermit(p); err != nil {
		return err
	}
	if err := core.CheckLease("lease", lease); err != nil {
		return err
	}
	// Stop the renewals first, or one in flight could undo a shorter lease.
	s.mu.Lock()
	k := s.held[p.ID]
	renewed := k != nil && k.lease != nil
	var last time.Time // the last renewal, to watch the permit again from
	if renewed {
		last = k.lease.Renewed()
		k.lease.Remove()
		k.lease = nil
	}
	s.mu.Unlock()
	sent := time.Now()
	w := s.h.s.Writer()
	ok, err := s.x.Extend(ctx, w, p.ID, lease)
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := k != nil && s.held[p.ID] == k
	switch {
	case err != nil:
		if kept && renewed { // as it was
			_ = s.watchLocked(p.ID, k, last)
		}
		return err
	case !ok:
		if kept {
			delete(s.held, p.ID)
			k.stopLocked()
		}
		return s.notHeld(p, k)
	}
	if kept {
		k.stopLocked()
		k.timeLocked(lossAt(sent, lease))
	}
	if err := core.Acked(w); err != nil {
		return fmt.Errorf("%w; the new lease stands", err)
	}
	return nil
}
