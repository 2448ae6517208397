package hold

import (
	"time"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/obs"
)

// lostLocked marks the current hold lost: it is forgotten, Lost closes,
// and releases report ErrLeaseLost until a fresh hold is taken. The caller
// holds mu, so that a release recording its reply sees either the hold or
// its loss, never a closed Lost with the hold still counted.
func (t *Tracker) lostLocked() {
	t.emitLocked(obs.LeaseLost, nil)
	t.scoped.End(func(what string) error { return errs.Of(what, errs.ErrLeaseLost, "the hold was lost") })
	t.goneLocked()
}

// closedLocked ends the current hold because the Client was closed: the
// watchdog no longer renews it, so it ends in Redis within a lease, and
// the handle must not count on it from now on. It is forgotten as a lost
// hold is (Lost closes), and its contexts end with ErrClosed. The caller
// holds mu.
func (t *Tracker) closedLocked() {
	t.emitLocked(obs.LeaseLost, errs.ErrClosed)
	t.scoped.End(func(what string) error {
		return errs.Of(what, errs.ErrClosed, "the hold is no longer kept")
	})
	t.goneLocked()
}

// goneLocked forgets the current hold, closes Lost and has releases report
// ErrLeaseLost (naming the hold's token, see ReleaseArg) until a fresh hold is
// taken; the caller holds mu.
func (t *Tracker) goneLocked() {
	if t.count > 0 {
		t.rareLocked().lostArg = t.arg
	}
	t.dropLocked()
	switch {
	case t.lost == nil: // nobody asked for it: none made
		t.lost = closedChan
	case !Closed(t.lost):
		close(t.lost)
	}
	t.gone = true
}

// closedChan is the Lost channel of a hold lost before anybody asked for
// it: closed, and shared.
var closedChan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// dropLocked forgets the current hold; the caller holds mu.
func (t *Tracker) dropLocked() {
	if t.listed {
		t.notices.Remove(t.held(), t)
		t.listed = false
	}
	if t.lease != nil {
		t.lease.Remove()
	}
	t.lease, t.kept, t.fixed = nil, nil, 0
	t.stopTimersLocked()
	if t.rare != nil {
		t.rare.maybeEnd, t.rare.ending, t.rare.extended, t.rare.extending = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	}
	t.count, t.token, t.arg, t.unlocking = 0, 0, nil, false
	t.gate.End()
}

// stopTimersLocked stops the fixed lease's timer and bound; the caller
// holds mu.
func (t *Tracker) stopTimersLocked() {
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	if t.rare != nil && t.rare.bound != nil {
		t.rare.bound.Stop()
		t.rare.bound = nil
	}
}

// EndIf ends the hold whose Lost channel is lost, if it is still the
// current one, as a lease that finds it gone does: lost, or with closed
// no longer kept once the Client is closed (see closedLocked). It is how
// the caller that keeps a hold (see Upkeep) reports its end: a compound
// hold, once too few of its parts still hold.
func (t *Tracker) EndIf(lost <-chan struct{}, closed bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.lost != lost || t.count == 0:
	case closed:
		t.closedLocked()
	default:
		t.lostLocked()
	}
}
