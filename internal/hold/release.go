package hold

import (
	"context"
	"errors"

	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/obs"
)

// StartRelease begins a release request in the handle's turn, which
// EndRelease gives back. A handle that holds nothing and has lost nothing
// gets ErrNotHeld without a request (and without the turn). If the request
// drops the last hold, the watchdog stops renewing it first, so that a
// released hold is never renewed. all says whether the release must drop
// every hold of the owner: the handle's last one, or a hold it lost, which
// nobody renews any more. Redis may count more holds than the handle does
// (a re-entry applied there whose reply and undo were both lost, and whose
// caller was told it failed): nobody will release those, so the last
// release drops them too. what names the hold in errors; "" names it by the
// Tracker's tag (see whatLocked).
func (t *Tracker) StartRelease(ctx context.Context, what string) (all bool, err error) {
	if err := t.take(ctx); err != nil {
		return false, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.count == 0 && !t.gone {
		t.give()
		return false, errs.Of(t.whatLocked(what), errs.ErrNotHeld, "not held by this handle")
	}
	if t.count == 1 && t.lease != nil {
		t.lease.Remove()
		t.lease = nil
	}
	if t.count == 1 {
		// A hold being released is not lost by its timers, and the work it
		// guards ends now: Redis may give the name to another as soon as
		// the request arrives, before its reply comes back, or the reply
		// may never come. A release that fails does not bring the
		// Contexts back; Unlock again releases what is left.
		t.stopTimersLocked()
		t.scoped.End(releasedCause)
		t.unlocking = true
	}
	return t.count == 1 || t.count == 0 && t.gone, nil
}

// EndRelease records the reply of the release request StartRelease began
// (see released), or its failure. A release that failed may have been
// applied, or not, and its caller may never retry it (a deferred Unlock):
// a hold that StartRelease stopped renewing is not renewed again, and a
// timer reports it lost when its lease may end in Redis (ending), unless
// a later release or Extend succeeds first. A failed release of a
// re-entry leaves the hold as it was. A hold found lost before the reply
// (Lost closed) is ErrLeaseLost whatever became of the request, which
// could only delete what Redis may still have of it: a request that failed
// leaves that to its lease. A WAIT shortfall (core.Writer) comes with the
// reply: the release stands, and the shortfall is returned. It gives the
// turn back.
func (t *Tracker) EndRelease(n int64, err error, what string) error {
	defer t.give()
	var short error
	if errors.Is(err, errs.ErrNotReplicated) {
		short, err = core.ReleaseErr(err), nil // n says what the release did
	}
	if err != nil {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.count == 0 && t.gone {
			return errs.Lost(t.whatLocked(what),
				"the hold was lost before release (deleting what Redis may still have of it failed: %s)", errs.Words(err))
		}
		if t.count > 0 && t.lease == nil && t.fixed == 0 && t.ends().ending.IsZero() && t.kept != nil {
			t.rareLocked().ending = t.kept.Ends()
		}
		t.watchLocked()
		return err
	}
	if err := t.released(n, what); err != nil {
		return err
	}
	return short
}

// released records a release reply: the remaining count, or -1 when Redis
// says the owner holds nothing. It returns ErrNotHeld, or ErrLeaseLost (which
// also matches ErrNotHeld) when the handle believed it held the lock.
func (t *Tracker) released(n int64, what string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n >= 0 && t.count == 0 && t.gone {
		// The handle's hold was lost but Redis still had it (a fixed lease
		// whose timer fired just before the server's expiry): it is
		// deleted now, and still reported lost.
		return errs.Lost(t.whatLocked(what), "the hold was lost before release")
	}
	if n >= 0 {
		// A count above the handle's is of re-entries whose callers were
		// told they failed: the handle's last release drops them (all).
		left := min(n, t.count-1)
		if left == 0 {
			t.emitLocked(obs.Released, nil) // while the hold is still counted
		}
		t.count = left
		if t.count == 0 {
			t.scoped.End(releasedCause)
			t.dropLocked()
		} else {
			t.unlocking = false
			t.watchLocked()
		}
		return nil
	}
	if t.count > 0 || t.gone {
		t.lostLocked()
		return errs.Lost(t.whatLocked(what), "the hold expired or was deleted before release")
	}
	return errs.Of(t.whatLocked(what), errs.ErrNotHeld, "not held by this handle")
}

// releasedCause is the cause of a released hold's Contexts.
func releasedCause(what string) error { return errs.Of(what, errs.ErrNotHeld, "released") }

// Forced records that the hold was deleted by force: a loss.
func (t *Tracker) Forced() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.count > 0 {
		t.lostLocked()
	}
}

// LostIf records that a request found the hold of token gone: a loss, if
// that hold is still the handle's current one (a later hold is not).
func (t *Tracker) LostIf(token uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.count > 0 && t.token == token {
		t.lostLocked()
	}
}
