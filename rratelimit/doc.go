// Package rratelimit holds a rate limiter named in Redis, shared by every
// process that uses the name, in the spirit of Redisson's RRateLimiter and
// of golang.org/x/time/rate across processes: N events per period, with a
// burst, counted on the server's clock.
//
//	lim := rratelimit.New(c, "partner-api", rratelimit.PerSecond(100).WithBurst(10))
//	if err := lim.Wait(ctx); err != nil { ... } // in arrival order, across processes
//	call()
//
//	r, err := lim.Allow(ctx) // never waits
//	if err == nil && !r.Allowed { reject(r.RetryAfter) }
//
// # The algorithm
//
// The limiter is GCRA, the generic cell rate algorithm, run by one Lua
// script on the server's clock (TIME): client clocks do not matter. Its
// state is one time, the theoretical arrival time (TAT): when the limiter
// would be idle again had every event admitted so far come exactly one
// interval (Per/Events) apart. An event is admitted when, counted, it
// leaves TAT at most Burst intervals ahead of now. There are no windows,
// so no edge at which twice the rate gets through: in any span of time w,
// wherever it starts, the limiter admits at most Burst + Events*w/Per
// events, and Allow never admits more than that bound however many
// processes call it at once.
//
// A worked example: Limit{Events: 10, Per: time.Second, Burst: 3} has an
// interval of 100ms. After an idle spell, three events are admitted at
// once (TAT moves 300ms ahead of now, the most a burst of 3 allows); a
// fourth at the same instant is refused with RetryAfter 100ms. From then
// on one event is admitted every 100ms, and after 300ms without events
// the burst of 3 is back. No second, wherever it starts, holds more than
// 3 + 10 events, and a second that follows a saturated one holds 10.
// Burst 1, the default (0 means 1), spaces events evenly: PerSecond(100)
// admits one every 10ms, never two at once, and at most 101 in any second.
//
// # Waiting
//
// Wait and WaitN reserve: one round trip moves TAT past the events asked
// for and replies how long until their slot, and the call sleeps that long
// and returns. Reservations are made in the order the calls reach Redis,
// whatever process they come from, so waiters are served first come,
// first served, with no retry loop, no polling and no pub/sub; a long
// queue costs nothing while it waits. A context whose deadline comes
// before the slot reserves nothing: the call returns at once, as
// x/time/rate's Wait does.
//
// A wait whose context ends while it sleeps gives its reservation back
// when no later one was made after it: TAT moves back by its cost, and the
// next caller gets the slot. When later waits were reserved behind it,
// their slots were computed from its own and are kept (they sleep already,
// and cannot be told to come earlier without a message); moving TAT back
// then would hand its slot to a new caller at the time of an existing one,
// two events where the limit allows one. Its slot is left unused instead:
// a cancellation never makes the limiter admit more than the limit, at
// worst a little less.
//
// # The limit
//
// The limit is stored with the state, in Redis: every handle on a name
// uses the stored one, whatever limit it was made with; a handle's own
// limit is used only to create the state where there is none (the first
// use of the name, or after the state expired). The stored one wins, so
// that a limit changed with SetLimit holds for every process, those
// started with the old one included. Result.Limit and Limit say which one
// is in effect.
//
// SetLimit keeps the state: the events counted and not yet drained stay
// counted, converted to the new limit (TAT's lead over now is scaled from
// old intervals to new ones), so that a change admits no burst of its own
// and none is lost. Waits reserved before the change keep their slots;
// after a rise of the rate, new callers may be served before them. A
// limit set by SetLimit stays a day after the limiter's last use; one that
// New created leaves with the state.
//
// # Keys and their lifetime
//
// For a name N and the Client's prefix P, a limiter is one hash, P:{N}:rate,
// holding the limit, TAT and the id of the last request counted, in the
// name's Redis Cluster slot. It expires by itself one period after TAT,
// when the limiter is idle again (an idle limiter is the same as none), or
// a day after its last use for a limit that SetLimit set. A key of another
// type, or a hash another primitive wrote there, is ErrWrongType, and
// Redis is left unchanged. A limiter and a lock of the same name are
// separate objects: no key of one is the other's.
//
// # Retries and failures
//
// A call that go-redis sends again after losing its reply is counted once,
// whatever calls reached the limiter in between: each take's request id is
// kept with its slot until 15 s past it (in a second key of the name, in
// its slot), and a retry finds it and replies with the same slot. The
// limiter does not wait for replicas (WithWaitReplicas does not apply):
// a failover to a replica that missed the last writes forgets the events
// they counted, at most one burst and what the lag held. When Redis cannot be reached, Allow and Wait return
// an error that matches redcoord.ErrNotAcquired, or admit, for a handle
// made WithFailOpen.
package rratelimit
