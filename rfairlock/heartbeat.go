package rfairlock

import (
	"sync"
	"time"

	"github.com/redcoord/redcoord/internal/lease"
)

// heartbeat keeps one waiting request's place in the queue: the watchdog
// renews its deadline in the same pipelined tick as the Client's leases.
// If a renewal finds the request gone from the queue (it lapsed while the
// process was paused or cut off), the watch ends; the next try queues the
// request again, at the back, and watch starts a new one.
type heartbeat struct {
	w *lease.Watchdog
	r lease.Renewal

	mu      sync.Mutex   // guards the fields below
	watched *lease.Lease // nil: not watched
	stopped bool
}

// watch makes sure the heartbeat is renewed; since is when the request that
// last set the deadline was sent. It fails only when the watchdog is closed.
func (h *heartbeat) watch(since time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.watched != nil || h.stopped {
		return nil
	}
	var l *lease.Lease
	l, err := h.w.Add(h.r, since, func() {
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

// stop ends the heartbeat for good: no renewal is sent after it returns.
func (h *heartbeat) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	if h.watched != nil {
		h.watched.Remove()
		h.watched = nil
	}
}
