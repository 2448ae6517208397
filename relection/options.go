package relection

import (
	"time"

	"github.com/redcoord/redcoord/internal/hold"
)

// Option configures an Election.
type Option func(*options) error

// options is what the Options set; the zero value is the default.
type options = hold.Options

// WithMaxPollInterval bounds the wait between two checks by a candidate or
// an observer of this handle, and so what a lost message costs, overriding
// the Client's WithMaxPollInterval (or WithPolling interval). It must be
// > 0. The default is the Client's.
func WithMaxPollInterval(d time.Duration) Option { return hold.MaxPoll(d) }
