package hold

import (
	"context"
	"errors"
	"time"

	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/scripts"
)

// Extend gives the current hold a fixed lease of length, in the handle's
// turn; what names the hold in errors as StartRelease's does. The
// watchdog stops renewing the hold first, since a renewal in flight could
// undo a shorter lease; then send sets the lease in Redis and reports
// whether the owner still had the hold. The new lease is counted
// from before send, and the hold ends with a timer at its end, less
// lease.Margin. A hold Redis no longer had is lost: ErrLeaseLost, which
// matches ErrNotHeld too. A send refused with ErrWrongType (the scripts
// check their keys before the first write) leaves the hold kept as it
// was. A send that failed otherwise may have been applied (its reply lost;
// go-redis may have retried it and got another error) and set the lease,
// which no renewal extends (the scripts leave a fixed lease alone): the
// hold is kept as it was, and also lost at that lease's end (maybeEnd)
// unless a later Extend succeeds. A WAIT shortfall leaves the new lease
// standing, and is returned.
func (t *Tracker) Extend(ctx context.Context, what string, length time.Duration, send func() (bool, error)) error {
	if err := t.take(ctx); err != nil {
		return err
	}
	defer t.give()
	t.mu.Lock()
	if t.count == 0 {
		gone, what := t.gone, t.whatLocked(what)
		t.mu.Unlock()
		if gone {
			return errs.Lost(what, "the hold was lost before this call")
		}
		return errs.Of(what, errs.ErrNotHeld, "not held by this handle")
	}
	// Nothing renews the hold while send is on its way, so the lease it has
	// may end in Redis before send is applied; and send may be applied at
	// once, with a lease shorter than what is left. A timer reports the
	// hold lost at the earlier of the two ends.
	sent := time.Now()
	end, ends := t.deadlineLocked()
	if short := sent.Add(length - lease.Margin(length)); !ends || short.Before(end) {
		end, ends = short, true
	}
	if t.lease != nil {
		t.lease.Remove()
		t.lease = nil
	}
	t.stopTimersLocked()
	if ends {
		t.timer = time.AfterFunc(time.Until(end), t.expiryLocked())
		t.rareLocked().extending = end
	}
	t.mu.Unlock()
	ok, err := send()
	short := errors.Is(err, errs.ErrNotReplicated)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rare != nil {
		t.rare.extending = time.Time{}
	}
	if t.timer != nil && (err != nil && !short) {
		t.timer.Stop() // watchLocked keeps the hold as it was
		t.timer = nil
	}
	switch {
	case err != nil && !short:
		if t.count > 0 && !errors.Is(err, errs.ErrWrongType) {
			// Redis may have applied it: the hold then ends with the new
			// lease, which no renewal extends any more.
			r := t.rareLocked()
			if end := sent.Add(length - lease.Margin(length)); r.maybeEnd.IsZero() || end.Before(r.maybeEnd) {
				r.maybeEnd = end
			}
		}
		t.watchLocked() // as it was, bounded by maybeEnd
		return err
	case !ok:
		if t.count > 0 {
			t.lostLocked()
		}
		return errs.Lost(t.whatLocked(what), "the hold expired or was deleted before this call")
	}
	if t.count == 0 { // a timer found it lost while the request was on its way
		return errs.Lost(t.whatLocked(what), "the hold was found lost during this call")
	}
	if t.timer != nil {
		t.timer.Stop()
	}
	if r := t.rare; r != nil {
		r.maybeEnd = time.Time{} // this lease replaced any an unknown Extend set
		r.ending = time.Time{}   // and any end a failed release left
	}
	t.fixed, t.rareLocked().extended = length, sent
	t.timer = time.AfterFunc(length-lease.Margin(length)-time.Since(sent), t.expiryLocked())
	if short {
		return errs.Noted(err, "the new lease stands")
	}
	return nil
}

// watchLocked keeps the current hold again as it was kept before a
// request stopped that: the watchdog renews it from its last renewal, or a
// timer marks it lost when its fixed lease ends or at ending, if set (a
// release failed); and bound marks it lost at maybeEnd, if set. A hold the
// closed watchdog no longer takes is ended as its Close ends the others.
// The caller holds mu.
func (t *Tracker) watchLocked() {
	if t.count == 0 {
		return
	}
	if r := t.rare; r != nil && !r.maybeEnd.IsZero() && r.bound == nil {
		r.bound = time.AfterFunc(time.Until(r.maybeEnd), t.expiryLocked())
	}
	if t.lease != nil || t.timer != nil {
		return
	}
	if ending := t.ends().ending; !ending.IsZero() {
		t.timer = time.AfterFunc(time.Until(ending), t.expiryLocked())
		return
	}
	if t.fixed > 0 {
		t.timer = time.AfterFunc(time.Until(t.fixedEndLocked()), t.expiryLocked())
		return
	}
	if t.kept == nil {
		return
	}
	if err := t.kept.Again(); err != nil {
		t.closedLocked()
		return
	}
	t.lease = t.kept
}

// fixedEndLocked returns when the current hold's fixed lease may end in
// Redis, by this process's clock; the caller holds mu.
func (t *Tracker) fixedEndLocked() time.Time {
	from := t.since
	if r := t.rare; r != nil && !r.extended.IsZero() {
		from = r.extended
	}
	return from.Add(t.fixed - lease.Margin(t.fixed))
}

// expiryLocked returns what a timer calls when the current hold may be
// gone: its end, bound to it, so that a timer left from an earlier hold
// cannot end a later one. The caller holds mu.
func (t *Tracker) expiryLocked() func() {
	n := t.n
	return func() { t.endIf(n, false) }
}

// Deadline returns when the current hold may be gone from Redis unless
// renewed first, by this process's clock (when its Lost would close); ok
// is false when the handle holds nothing, or its hold is being released.
func (t *Tracker) Deadline() (d time.Time, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.deadlineLocked()
}

// deadlineLocked is Deadline; the caller holds mu.
func (t *Tracker) deadlineLocked() (d time.Time, ok bool) {
	r := t.ends()
	switch {
	case t.count == 0:
		return time.Time{}, false
	case t.timer != nil && !r.extending.IsZero():
		d, ok = r.extending, true
	case t.timer != nil && !r.ending.IsZero():
		d, ok = r.ending, true
	case t.lease != nil:
		d, ok = t.lease.Deadline(), true
	case t.timer != nil:
		d, ok = t.fixedEndLocked(), true
	}
	if ok && r.bound != nil && r.maybeEnd.Before(d) {
		d = r.maybeEnd
	}
	return d, ok
}

// Extend gives the handle's hold of the lock hash a fixed lease of length
// from now (see Tracker.Extend), with lock_extend: the watchdog stops
// renewing it, a renewal already on its way leaves it alone, and Lost
// closes when it ends. A hold that is gone is ErrLeaseLost.
func (h *Handle) Extend(ctx context.Context, length time.Duration) error {
	if err := core.CheckLease("lease", length); err != nil {
		return err
	}
	if err := h.Check(ctx); err != nil {
		return err
	}
	send := func() (bool, error) {
		return h.Lock.Extend(ctx, h.S.Writer(), h.NextRequest(), length, scripts.TokenArg(h.Hold.Token()),
			h.S.EncodeMeta(length, true, h.Value()))
	}
	return h.Hold.Extend(ctx, "", length, send)
}
