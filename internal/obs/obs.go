// Package obs carries the events of a Client's observer (redcoord's
// WithObserver) from the packages that see them: the acquire loop, the
// holds, the watchdog and the Hub. A nil Func is no observer, and Emit on
// it costs a nil check: nothing is built, nothing allocated.
package obs

import (
	"context"
	"time"
)

// Kind says what an Event reports; redcoord's EventKind has the same
// values.
type Kind uint8

// The kinds, as redcoord documents them.
const (
	Acquired Kind = iota + 1
	WaitEnded
	Released
	LeaseLost
	Renewed
	HubReconnected
	Waiting
	HubMoved
	Retrying
	RateAdmitted
	RateWaited
	RateRefused
)

// Event is one event; redcoord's Event has the same fields.
type Event struct {
	Kind      Kind
	Primitive string
	Name      string
	Wait      time.Duration
	Woken     time.Duration
	Held      time.Duration
	Took      time.Duration
	Count     int
	Waited    bool
	Err       error
	Context   context.Context
}

// Func receives events; nil is no observer.
type Func func(Event)

// Emit calls f with e, if f is set.
func (f Func) Emit(e Event) {
	if f != nil {
		f(e)
	}
}
