package scripts

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// The rate limiter's scripts: lib.lua, rate_lib.lua, then the operation.
var (
	rateTake  = loadRate("rate_take")
	rateBack  = loadRate("rate_back")
	rateSet   = loadRate("rate_set")
	rateState = loadRate("rate_state")
)

// rateScripts lists this file's scripts, for SHA.
var rateScripts = []*Script{rateTake, rateBack, rateSet, rateState}

func loadRate(name string) *Script { return loadWith(name, "rate_lib.lua") }

// RateLimit is a limit as the rate scripts take it: events per period
// (µs), and the burst.
type RateLimit struct {
	Events, Per, Burst int64
}

// Rate names one rate limiter (see rate_lib.lua).
type Rate struct {
	Key, Done string // keys: the limiter, its recent takes
	Kind      string
	// Marks is how long a take's request id is kept past its slot, so
	// that a retry is counted once: RequestTTL when 0.
	Marks time.Duration
}

func (r Rate) keys() []string { return []string{r.Key, r.Done} }

// args prepends the arguments every rate script takes: lib.lua's four (no
// publish command or channel: the limiter sends no message) and the
// caller's limit.
func (r Rate) args(l RateLimit, more ...any) []any {
	return append([]any{r.Kind, "", "", marks(r.Marks), l.Events, l.Per, l.Burst}, more...)
}

// RateTake is what rate_take replied.
type RateTake struct {
	Taken   bool          // the events were counted
	TooMany bool          // n is above the burst: never admissible
	Wait    time.Duration // from the server's now to the slot
	Left    int64         // what remains of the burst
	Limit   RateLimit     // the limit in effect
	Cost    int64         // µs added to the TAT, for Back
}

// Take counts n events under the request id req if their slot comes within
// maxWait of the server's now (a negative maxWait: no bound).
func (r Rate) Take(ctx context.Context, rdb redis.Scripter, l RateLimit, n int64, maxWait time.Duration,
	req string) (RateTake, error) {
	mw := int64(-1)
	if maxWait >= 0 {
		mw = maxWait.Microseconds()
	}
	v, err := rateTake.Run(ctx, rdb, r.keys(), r.args(l, n, mw, req)...)
	if err != nil {
		return RateTake{}, err
	}
	a, err := ints(v, 6)
	if err != nil {
		return RateTake{}, err
	}
	t := RateTake{
		Taken: a[0] == 1, TooMany: a[0] == -1,
		Wait: time.Duration(a[1]) * time.Microsecond, Left: a[2],
		Limit: RateLimit{Events: a[3], Per: a[4], Burst: a[5]},
	}
	if t.Taken {
		if len(a) < 7 {
			return RateTake{}, errUnexpected(v)
		}
		t.Cost = a[6]
	}
	return t, nil
}

// Back gives back the events of the take req, which cost cost µs, if no
// take was counted after it, and reports whether it did.
func (r Rate) Back(ctx context.Context, rdb redis.Scripter, l RateLimit, req string, cost int64) (bool, error) {
	v, err := rateBack.Run(ctx, rdb, r.keys(), r.args(l, req, cost)...)
	if err != nil {
		return false, err
	}
	return isOne(v)
}

// Set stores l as the limit in effect, keeping the state.
func (r Rate) Set(ctx context.Context, rdb redis.Scripter, l RateLimit) error {
	_, err := rateSet.Run(ctx, rdb, r.keys(), r.args(l)...)
	return err
}

// RateState is what rate_state replied.
type RateState struct {
	Stored bool      // the hash holds a limit
	Limit  RateLimit // the limit in effect: the stored one, or l
	Left   int64     // what remains of the burst
}

// State reads the limit in effect (l where none is stored) and what is
// left of the burst.
func (r Rate) State(ctx context.Context, rdb redis.Scripter, l RateLimit) (RateState, error) {
	v, err := rateState.Run(ctx, rdb, r.keys(), r.args(l)...)
	if err != nil {
		return RateState{}, err
	}
	a, err := ints(v, 5)
	if err != nil {
		return RateState{}, err
	}
	return RateState{Stored: a[0] == 1, Limit: RateLimit{Events: a[1], Per: a[2], Burst: a[3]}, Left: a[4]}, nil
}
