package rfairlock

import (
	"time"

	"github.com/redcoord/redcoord/internal/errs"
)

// Option configures a Mutex.
type Option func(*options) error

type options struct {
	maxPoll time.Duration // 0: the Client's
}

// WithMaxPollInterval bounds the wait between two checks by a waiter of this
// handle, and so what a lost grant message costs, overriding the Client's
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
