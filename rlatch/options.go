package rlatch

import (
	"time"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/hold"
)

// Option configures a Latch.
type Option func(*options) error

// options is what the Options set.
type options struct {
	hold.Options // MaxPoll; 0: the Client's
	spent        time.Duration
	waitForSet   bool
}

// WithWaitForSet makes the handle's Wait wait for a latch never set (or
// deleted, or expired after reaching zero) to be set by TrySetCount, which
// wakes it at once (the poll interval bounds what a lost message costs),
// and then for that round to reach zero: workers may start before the
// coordinator that sets the count. The default is that Wait reports such a
// latch as ErrNotSet at once, so that a misspelt name is an error, not a
// wait that never ends. Either way, a round that is deleted while Wait
// waits for it to reach zero ends the Wait with ErrNotSet.
func WithWaitForSet() Option {
	return func(o *options) error {
		o.waitForSet = true
		return nil
	}
}

// WithMaxPollInterval bounds the wait between two checks by a waiter of this
// handle, and so what a lost message costs, overriding the Client's
// WithMaxPollInterval (or WithPolling interval). It must be > 0. The default
// is the Client's.
func WithMaxPollInterval(d time.Duration) Option {
	return func(o *options) error { return hold.MaxPoll(d)(&o.Options) }
}

// WithSpentTTL sets how long a latch stays in Redis after its count reached
// zero: a Wait in that time returns at once, a Wait after it is ErrNotSet.
// It applies to the counts this handle sets (TrySetCount): the coordinator
// decides it, not whichever worker counts down last. It must be at least a
// minute, and longer than the poll interval of every waiter (a waiter that
// polls, or whose message is lost, looks again only then). The default is
// DefaultSpentTTL, an hour.
func WithSpentTTL(d time.Duration) Option {
	return func(o *options) error {
		if d < time.Minute {
			return errs.Invalid("WithSpentTTL", "must be at least 1m, got %v", d)
		}
		o.spent = d
		return nil
	}
}
