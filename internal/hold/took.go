package hold

import (
	"time"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/scripts"
)

// Lease says how a fresh hold is kept: renewed by w with r (Fixed == 0), or
// expiring after Fixed.
type Lease struct {
	Watchdog *lease.Watchdog
	Renewal  lease.Renewal
	Fixed    time.Duration
	Since    time.Time // taken before the acquire request was sent
	TokenArg any       // the hold's token as a script argument; nil: made from it
	// OnLost, if set, is called when the lease or the timer finds the hold
	// gone, or the Client's Close ends it, after Lost has closed, outside
	// the Tracker's lock.
	OnLost func()
}

// Reentry reports whether an acquire reply of count holds, to a request
// sent with belief b, re-entered the hold b names: the scripts reply a
// count of 1 for a fresh hold (also one taken over from an orphan) and
// more for a re-entry, which only a request naming a hold makes. A
// re-entry changes no lease.
func Reentry(b Belief, count int64) bool { return b.Held && count > 1 }

// Took records a successful acquire reply to a request sent in the
// caller's turn with belief b. A re-entry (see Reentry) counts one more
// hold of the current one, if that is still the hold b names: a hold found
// lost while the request was on its way (its fixed lease's timer, a
// renewal that found it gone) is not taken again by the re-entry, which
// set no lease: Took then fails with an error matching ErrNotAcquired and
// ErrLeaseLost, and the caller gives the re-entry back. A fresh hold
// replaces the current one, which is then lost, and is kept as l says: the
// watchdog watches it (and the Client's Close ends it, see closedLocked),
// or a timer marks it lost when its fixed lease ends. Otherwise it fails
// only when the watchdog is closed.
func (t *Tracker) Took(b Belief, token uint64, count int64, l Lease) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if Reentry(b, count) {
		if t.count == 0 || t.token != b.Token {
			return errs.LostAcquire("%s %q: the hold this acquire re-entered was lost before its reply came", t.kind, t.name)
		}
		t.count = count
		return nil
	}
	if t.count > 0 { // the previous hold is gone: a fresh one replaced it
		t.lostLocked()
	}
	t.dropLocked()
	t.gone = false
	lost := make(chan struct{})
	end := func(closed bool) {
		t.mu.Lock()
		hit := t.lost == lost && t.count > 0
		switch {
		case hit && closed:
			t.closedLocked()
		case hit:
			t.lostLocked()
		}
		t.mu.Unlock()
		if hit && l.OnLost != nil {
			l.OnLost()
		}
	}
	if l.Fixed > 0 {
		// Lost closes when the lease may end in Redis, as the watchdog's do.
		t.timer = time.AfterFunc(l.Fixed-lease.Margin(l.Fixed)-time.Since(l.Since), func() { end(false) })
	} else {
		ls, err := l.Watchdog.Add(l.Renewal, l.Since, end)
		if err != nil {
			return err
		}
		t.lease = ls
	}
	arg := l.TokenArg
	if arg == nil {
		arg = scripts.TokenArg(token)
	}
	t.count, t.token, t.arg, t.lost, t.keep, t.end, t.since = max(count, 1), token, arg, lost, l, end, l.Since
	if t.notices != nil {
		t.notices.Add(t.held, t)
		t.listed = true
	}
	return nil
}
