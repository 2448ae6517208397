package lease

import (
	"sync"
	"time"
)

// Heartbeat keeps one waiter registered in Redis (a fair queue's entry, a
// read-write lock's waiting writer, an entry in a waiter registry that
// releases wake from): the watchdog renews its deadline in the same
// pipelined tick as the Client's leases. If a renewal finds the waiter
// gone (woken, or lapsed while the process was paused or cut off), the
// watch ends; the next try registers the waiter again, and Watch starts a
// new one. Its zero value is not usable; use NewHeartbeat.
type Heartbeat struct {
	w *Watchdog
	r Renewal

	mu      sync.Mutex // guards the fields below
	watched *Lease     // nil: not watched
	stopped bool
}

// NewHeartbeat returns a heartbeat renewed by w with r, not yet watched.
func NewHeartbeat(w *Watchdog, r Renewal) *Heartbeat {
	return &Heartbeat{w: w, r: r}
}

// Watch makes sure the heartbeat is renewed after a request sent at since
// registered the waiter (again). It watches a new lease in place of the
// one it watched: a renewal of that one may be in flight, sent before the
// waiter registered again, and its reply that the waiter was gone must not
// end the watch of the new registration (the watchdog ignores the replies
// of a removed lease). It does nothing after Stop, and fails only when the
// watchdog is closed.
func (h *Heartbeat) Watch(since time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return nil
	}
	if h.watched != nil {
		h.watched.Remove()
		h.watched = nil
	}
	var l *Lease
	r := h.r
	r.Waiter = true
	l, err := h.w.Add(r, since, func(bool) {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.watched == l {
			h.watched = nil
		}
	})
	if err != nil {
		return err
	}
	h.watched = l
	return nil
}

// Stop ends the heartbeat for good: no renewal is sent after it returns.
func (h *Heartbeat) Stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	if h.watched != nil {
		h.watched.Remove()
		h.watched = nil
	}
}
