package hold

import (
	"time"

	"github.com/redcoord/redcoord/internal/errs"
)

// Options are what a lock handle's options set. Each lock package declares
// its own Option, a func(*options) error over an unexported alias of
// Options, so that its docs stay its own and show no internal type.
type Options struct {
	MaxPoll time.Duration // 0: the Client's
	Value   string        // what the handle says it is, stored with its holds
}

// MaxValueLen is the longest value a handle may say it is (Value).
const MaxValueLen = 4096

// Value is the option behind each lock package's WithValue.
func Value(v string) func(*Options) error {
	return func(o *Options) error {
		if len(v) > MaxValueLen {
			return errs.Invalid("WithValue", "must be at most %d bytes, got %d", MaxValueLen, len(v))
		}
		o.Value = v
		return nil
	}
}

// MaxPoll is the option behind each lock package's WithMaxPollInterval.
func MaxPoll(d time.Duration) func(*Options) error {
	return func(o *Options) error {
		if d <= 0 {
			return errs.Invalid("WithMaxPollInterval", "must be > 0, got %v", d)
		}
		o.MaxPoll = d
		return nil
	}
}
