package rsemaphore

import (
	"time"

	"github.com/redcoord/redcoord/internal/errs"
)

// Option configures a Semaphore or an ExpirableSemaphore.
type Option func(*options) error

// options is what the Options set; the zero value is the default.
type options struct {
	fair       bool
	waitForSet bool
	maxPoll    time.Duration // 0: the Client's
}

// WithWaitForSet makes the handle's blocking Acquire calls wait for
// permits never set, until TrySetPermits, SetPermits or AddPermits sets
// them (which wakes them at once; the poll interval bounds what a lost
// message costs), and then acquire as usual: workers may start before the
// coordinator that sets the permits. TryAcquire still reports permits
// never set as ErrNotSet. The default is that Acquire, too, reports them
// as ErrNotSet at once, so that a misspelt name is an error, not a wait
// that never ends.
func WithWaitForSet() Option {
	return func(o *options) error {
		o.waitForSet = true
		return nil
	}
}

// WithFair makes the handle's blocking Acquire calls wait in a queue in
// Redis and be served in the order they first asked (see Fairness in the
// package documentation). It applies to Semaphore; an ExpirableSemaphore
// rejects it. The default is unfair: a release wakes the waiters whose
// requests fit, and whichever reaches Redis first wins.
func WithFair() Option {
	return func(o *options) error {
		o.fair = true
		return nil
	}
}

// WithMaxPollInterval bounds the wait between two checks by a waiter of this
// handle, and so what a lost message costs, overriding the Client's
// WithMaxPollInterval (or WithPolling interval). It must be > 0. The default
// is the Client's.
func WithMaxPollInterval(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return errs.Invalid("WithMaxPollInterval", "must be > 0, got %v", d)
		}
		o.maxPoll = d
		return nil
	}
}
