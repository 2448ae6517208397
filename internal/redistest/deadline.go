package redistest

import (
	"sync"
	"time"
)

// deadline is one read or write deadline of a memConn, modelled on net.Pipe's:
// a channel that is closed when the deadline passes, so a waiter selects on
// it. The channel is closed by a time.AfterFunc timer, which inside a
// testing/synctest bubble runs on the bubble's fake clock.
type deadline struct {
	mu     sync.Mutex    // protects timer and cancel
	timer  *time.Timer   // closes cancel when it fires; nil without a deadline
	cancel chan struct{} // closed once the deadline has passed; never nil
}

func newDeadline() *deadline { return &deadline{cancel: make(chan struct{})} }

// set replaces the deadline with t; the zero time means none. A t in the past
// closes the channel at once, waking any waiter.
func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopLocked()
	expired := isClosed(d.cancel)
	if t.IsZero() {
		if expired {
			d.cancel = make(chan struct{})
		}
		return
	}
	if dur := time.Until(t); dur > 0 {
		if expired {
			d.cancel = make(chan struct{})
		}
		ch := d.cancel
		d.timer = time.AfterFunc(dur, func() { close(ch) })
		return
	}
	if !expired {
		close(d.cancel)
	}
}

// stop cancels the pending timer, if any, leaving the channel as it is.
func (d *deadline) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopLocked()
}

func (d *deadline) stopLocked() {
	if d.timer != nil && !d.timer.Stop() {
		<-d.cancel // the timer fired: its function, which takes no lock, closes cancel
	}
	d.timer = nil
}

// wait returns a channel that is closed once the current deadline passes.
func (d *deadline) wait() chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cancel
}

// isClosed reports whether ch is closed, without blocking.
func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
