package rlatch

import (
	"time"

	"github.com/redcoord/redcoord/internal/errs"
)

// Option configures a Latch.
type Option func(*options) error

// options is what the Options set.
type options struct {
	maxPoll time.Duration // 0: the Client's
	spent   time.Duration
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

// WithSpentTTL sets how long a latch stays in Redis after its count reached
// zero: a Wait in that time returns at once, a Wait after it is ErrNotSet.
// The CountDown that opens the latch sets its TTL, from this handle's
// option. It must be at least 1s. The default is DefaultSpentTTL, an hour.
func WithSpentTTL(d time.Duration) Option {
	return func(o *options) error {
		if d < time.Second {
			return errs.Invalid("WithSpentTTL", "must be at least 1s, got %v", d)
		}
		o.spent = d
		return nil
	}
}
