// Package hold is what the lock packages share: a lock handle's view of
// one of its holds (Tracker: count, fencing token, the watchdog lease or
// fixed-lease timer, and the channel that reports the hold lost), the Handle
// around it (argument checks, the lock hash's keys, request ids, Unlock,
// ForceUnlock and the state reads), and the Heartbeat that keeps a waiter
// registered in Redis (rfairlock's queue, rrwlock's waiting writers).
package hold

import (
	"fmt"
	"sync"
	"time"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/scripts"
)

// Tracker tracks one handle's hold. Its zero value is not usable; use New.
type Tracker struct {
	mu    sync.Mutex // guards the fields below
	count int64      // hold count as last reported by Redis
	token uint64     // fencing token of the current hold; 0 when none
	lease *lease.Lease
	timer *time.Timer   // fires at the end of a fixed lease
	lost  chan struct{} // the current hold's; closed by loss
	loss  func()        // closes lost, once
	keep  Lease         // how the current hold is kept, to watch it again
	watch func()        // the current hold's onLost, for the watchdog
}

// New returns a Tracker holding nothing.
func New() *Tracker { return &Tracker{lost: make(chan struct{}), loss: func() {}} }

// Count returns the hold count the handle last saw.
func (t *Tracker) Count() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.count
}

// Token returns the fencing token of the current hold, 0 when none.
func (t *Tracker) Token() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.token
}

// Lost returns the channel of the most recent fresh hold: closed when that
// hold is found gone, left open when it is released.
func (t *Tracker) Lost() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lost
}

// Lease says how a fresh hold is kept: renewed by w with r (Fixed == 0), or
// expiring after Fixed.
type Lease struct {
	Watchdog *lease.Watchdog
	Renewal  lease.Renewal
	Fixed    time.Duration
	Since    time.Time // taken before the acquire request was sent
}

// Took records a successful acquire reply. A token other than the current
// one starts a fresh hold: the watchdog watches it, or a timer marks it lost
// when its fixed lease ends. It fails only when the watchdog is closed.
func (t *Tracker) Took(token uint64, count int64, l Lease) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.count > 0 && token == t.token {
		// A re-entry. Replies of concurrent calls on one handle may arrive
		// out of order: keep the highest count (see Released for the rest).
		t.count = max(t.count, count)
		return nil
	}
	if t.count > 0 { // the previous hold is gone: a new token replaced it
		t.loss()
	}
	t.dropLocked()
	lost := make(chan struct{})
	var once sync.Once
	loss := func() { once.Do(func() { close(lost) }) }
	onLost := func() {
		loss()
		t.mu.Lock()
		if t.lost == lost && t.count > 0 {
			t.dropLocked()
		}
		t.mu.Unlock()
	}
	if l.Fixed > 0 {
		t.timer = time.AfterFunc(l.Fixed-time.Since(l.Since), onLost)
	} else {
		ls, err := l.Watchdog.Add(l.Renewal, l.Since, onLost)
		if err != nil {
			return err
		}
		t.lease = ls
	}
	t.count, t.token, t.lost, t.loss, t.keep, t.watch = count, token, lost, loss, l, onLost
	return nil
}

// Releasing runs before a release request: if it drops the last hold, the
// watchdog stops renewing it first, so a released hold is never renewed.
func (t *Tracker) Releasing() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.count <= 1 && t.lease != nil {
		t.lease.Remove()
		t.lease = nil
	}
}

// Released records a release reply: the remaining count, or -1 when Redis
// says the owner holds nothing. It returns ErrNotHeld, or ErrLeaseLost (which
// also matches ErrNotHeld) when the handle believed it held the lock.
func (t *Tracker) Released(n int64, what string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n >= 0 {
		t.count = n
		if n == 0 {
			t.dropLocked()
		} else if t.lease == nil && t.keep.Fixed == 0 && t.keep.Watchdog != nil {
			// Releasing stopped the renewals expecting the last release, but
			// holds remain (concurrent Locks on one handle): watch again.
			if ls, err := t.keep.Watchdog.Add(t.keep.Renewal, time.Now(), t.watch); err == nil {
				t.lease = ls
			}
		}
		return nil
	}
	if t.count > 0 {
		t.dropLocked()
		t.loss()
		return fmt.Errorf("%w: %w: %s: the hold expired or was deleted before release", errs.ErrLeaseLost, errs.ErrNotHeld, what)
	}
	return fmt.Errorf("%w: %s is not held by this handle", errs.ErrNotHeld, what)
}

// Forced records that the hold was deleted by force: a loss.
func (t *Tracker) Forced() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.count > 0 {
		t.dropLocked()
		t.loss()
	}
}

// dropLocked forgets the current hold; the caller holds t.mu.
func (t *Tracker) dropLocked() {
	if t.lease != nil {
		t.lease.Remove()
		t.lease = nil
	}
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	t.count, t.token = 0, 0
}

// Holder turns a lock's state into the public Holder.
func Holder(st scripts.State) redcoord.Holder {
	m := core.DecodeMeta(st.Meta)
	return redcoord.Holder{
		Owner: st.Owner, Client: m.Client, Host: m.Host, PID: m.PID,
		AcquiredAt: st.AcquiredAt, Lease: m.Lease, Fixed: m.Fixed,
		Remaining: st.Remaining, Count: st.Count, Token: st.Token,
	}
}
