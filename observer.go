package redcoord

import (
	"context"
	"time"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/obs"
)

// EventKind says what an Event reports.
type EventKind uint8

// What an observer hears (see WithObserver). The values are those of the
// internal events they are made from.
const (
	// Acquired: an acquire took a hold (a lock, a read hold, permits, a
	// lead, a latch that opened); Wait is how long the call waited, Woken
	// how long it took from the wake that ended the wait to the hold.
	Acquired EventKind = iota + 1
	// WaitEnded: a blocking acquire ended without a hold, its context done
	// or its Client closed, or a try failed after it began to wait (Waited
	// is then true); Wait is how long it took, Err why it ended.
	WaitEnded
	// Released: the release that ended a hold; Held is how long it was held.
	Released
	// LeaseLost: a hold was found lost, or ended by the Client's Close (Err
	// is then ErrClosed); Held is how long it had been held.
	LeaseLost
	// Renewed: one watchdog tick; Count is how many leases it renewed,
	// Took how long its round trips took, Err the first failure, if any.
	Renewed
	// HubReconnected: the Hub's pub/sub connection was re-established and
	// its subscriptions confirmed again; Count is how many channels.
	HubReconnected
	// Waiting: a blocking acquire found the primitive taken and began to
	// wait. Its Acquired or WaitEnded follows, with Waited true: the pairs
	// count the waiters of the moment.
	Waiting
	// HubMoved: on a Cluster, the Hub subscribed a shard channel on another
	// node (its slot migrated, or its node failed over); Name is the
	// channel.
	HubMoved
	// Retrying: a blocking acquire's try (or a pubsub Hub Wait's check)
	// failed with an error that an outage gives, such as a connection
	// refused or LOADING, and it tries again after a pause (see "Outages"
	// in the package documentation); Err is the error, Count how many tries
	// in a row failed, Wait the pause.
	Retrying
	// RateAdmitted: a rate limiter admitted Count events at once (an Allow,
	// or a Wait whose slot had come). Err is set when Redis could not be
	// reached and the limiter fails open (rratelimit.WithFailOpen).
	RateAdmitted
	// RateWaited: a rate limiter's Wait admitted Count events after
	// sleeping until their slot; Wait is how long it slept, Waited true.
	RateWaited
	// RateRefused: a rate limiter did not admit Count events: an Allow
	// over the limit (Wait is how long until it would be admitted), or a
	// Wait whose context ended before its slot (Err says why). A Wait
	// refused at once, its deadline before its slot, has Wait the wait it
	// needed; one that slept (Waited is then true) has Wait how long.
	RateRefused
)

var eventKindNames = [...]string{
	"", "acquired", "wait ended", "released", "lease lost", "renewed", "hub reconnected", "waiting",
	"hub moved", "retrying", "rate admitted", "rate waited", "rate refused",
}

func (k EventKind) String() string {
	if int(k) < len(eventKindNames) && k > 0 {
		return eventKindNames[k]
	}
	return "unknown"
}

// Event is what an observer hears. Primitive and Name say which hold
// (empty for Renewed and HubReconnected; HubMoved's Name is a channel).
type Event struct {
	Kind      EventKind
	Primitive string // "rlock", "rfairlock", "rrwlock", "rsemaphore", "rlatch", "relection", "rratelimit"
	Name      string
	Wait      time.Duration // Acquired, WaitEnded, RateX; Retrying: the pause
	Held      time.Duration // Released, LeaseLost
	Took      time.Duration // Renewed
	Count     int           // Renewed, HubReconnected, Retrying; RateX: events
	Waited    bool          // Acquired, WaitEnded: a Waiting event came first; RateX: a Wait slept
	Err       error         // WaitEnded, Renewed, HubReconnected, Retrying, RateX
	// Woken (Acquired) is the hand-off as the waiter's process sees it:
	// from the Hub's delivery of the wake that ended the wait (a release's
	// or a grant's message arriving, or a release in this process waking
	// its waiter) to the hold, so at most Wait. It is 0 when no wake ended
	// the wait: the acquire did not wait, or its hold came from a try of
	// its own (the one after it subscribed, a poll's), or from a wake the
	// Hub gave for messages it may have lost (a reconnect). It leaves out
	// the release in the other process and the message's way to this one.
	Woken time.Duration
	// Context is the context the acquire was called with (Waiting,
	// Acquired, WaitEnded, Retrying, RateX; nil otherwise), for its
	// values: a trace's span, a request id. It may be done by then.
	Context context.Context
}

// WithObserver calls f with each Event of the Client: every acquire, when
// it begins to wait and how long it waited, every release and how long the
// hold lasted, every lost lease, every watchdog tick, every Hub reconnect
// and shard channel move. f is called synchronously, at times under the
// Client's own locks: it must return quickly and must not call the
// Client's primitives (hand the event to a channel or to a metrics
// library). Without it nothing is built or allocated for events.
// Permits of a Semaphore (not an ExpirableSemaphore) have no lease, and
// report their acquires only. Package redcoordotel (module
// github.com/redcoord/redcoord/redcoordotel) records the events as
// OpenTelemetry metrics and spans.
func WithObserver(f func(Event)) Option {
	return func(o *options) error {
		if f == nil {
			return errs.Invalid("WithObserver", "nil func")
		}
		o.Observer = func(e obs.Event) {
			f(Event{Kind: EventKind(e.Kind), Primitive: e.Primitive, Name: e.Name,
				Wait: e.Wait, Held: e.Held, Took: e.Took, Count: e.Count, Waited: e.Waited, Err: e.Err,
				Woken: e.Woken, Context: e.Context})
		}
		return nil
	}
}
