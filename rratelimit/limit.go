package rratelimit

import (
	"fmt"
	"time"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/scripts"
)

// Limit is a rate: Events per Per, of which up to Burst may come at once
// after an idle spell. In any span of time w the limiter admits at most
// Burst + Events*w/Per events (see "The algorithm" in the package
// documentation for a worked example).
type Limit struct {
	// Events is how many events are admitted per Per, from 1 to MaxEvents.
	Events int
	// Per is the period, at least 1µs and at least one microsecond per
	// event (a rate of at most a million a second); it is counted in
	// whole microseconds, rounded up.
	Per time.Duration
	// Burst is how many events may be admitted at once after an idle
	// spell, and the most one call may ask for; from 0 to MaxEvents, 0
	// meaning 1: events spaced evenly, Per/Events apart.
	Burst int
}

// MaxEvents bounds Limit.Events and Limit.Burst.
const MaxEvents = 1_000_000_000

// maxTolerance bounds Burst*Per/Events, the span a burst drains in:
// 10 years, so that every time a script computes stays exact in Lua.
const maxTolerance = 10 * 365 * 24 * time.Hour

// PerSecond returns a limit of n events a second, evenly spaced (a burst
// of 1): Limit{Events: n, Per: time.Second}.
func PerSecond(n int) Limit { return Limit{Events: n, Per: time.Second} }

// PerMinute returns a limit of n events a minute, evenly spaced (a burst
// of 1): Limit{Events: n, Per: time.Minute}.
func PerMinute(n int) Limit { return Limit{Events: n, Per: time.Minute} }

// WithBurst returns l with its Burst set to b.
func (l Limit) WithBurst(b int) Limit {
	l.Burst = b
	return l
}

// String returns the limit as "100 per 1s, burst 10".
func (l Limit) String() string {
	return fmt.Sprintf("%d per %v, burst %d", l.Events, l.Per, max(l.Burst, 1))
}

// check reports why l cannot be a limit, naming arg and the field.
func (l Limit) check(arg string) error {
	switch {
	case l.Events < 1 || l.Events > MaxEvents:
		return errs.Invalid(arg+".Events", "must be from 1 to %d, got %d", MaxEvents, l.Events)
	case l.Per < time.Microsecond:
		return errs.Invalid(arg+".Per", "must be at least 1µs, got %v", l.Per)
	case perUS(l.Per) < int64(l.Events):
		return errs.Invalid(arg, "%d events per %v is more than one a microsecond", l.Events, l.Per)
	case l.Burst < 0 || l.Burst > MaxEvents:
		return errs.Invalid(arg+".Burst", "must be from 0 (meaning 1) to %d, got %d", MaxEvents, l.Burst)
	case float64(max(l.Burst, 1))*float64(l.Per)/float64(l.Events) > float64(maxTolerance):
		return errs.Invalid(arg, "a burst of %d at %d per %v takes more than %v to drain",
			l.Burst, l.Events, l.Per, maxTolerance)
	}
	return nil
}

// perUS returns d in whole microseconds, rounded up.
func perUS(d time.Duration) int64 { return int64((d + time.Microsecond - 1) / time.Microsecond) }

// script returns l as the scripts take it.
func (l Limit) script() scripts.RateLimit {
	return scripts.RateLimit{Events: int64(l.Events), Per: perUS(l.Per), Burst: int64(max(l.Burst, 1))}
}

// limitOf returns the limit a script replied.
func limitOf(r scripts.RateLimit) Limit {
	return Limit{Events: int(r.Events), Per: time.Duration(r.Per) * time.Microsecond, Burst: int(r.Burst)}
}
