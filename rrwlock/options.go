package rrwlock

import (
	"time"

	"github.com/redcoord/redcoord/internal/hold"
)

// Option configures an RWMutex.
type Option func(*options) error

// options is what the Options set; the zero value is the default.
type options = hold.Options

// WithMaxPollInterval bounds the wait between two checks by a waiter of this
// handle, and so what a lost notification costs, overriding the Client's
// WithMaxPollInterval (or WithPolling interval). It must be > 0. The default
// is the Client's.
func WithMaxPollInterval(d time.Duration) Option { return hold.MaxPoll(d) }

// WithValue stores v with the handle's write and read holds, for
// operators: State returns it in its Writer and Readers (a worker's name,
// "worker-7", rather than an owner id). At most 4096 bytes; the default is
// none.
func WithValue(v string) Option { return hold.Value(v) }
