// Package outage lets a blocked wait ride out a Redis outage: it tells the
// errors that a server down, restarting, loading its data or failing over
// gives (Transient) from those that trying again cannot mend, and paces the
// tries of a wait that meets them (Retry): a capped back-off, each failure
// reported to the observer, a few of them logged.
package outage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/backoff"
	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/obs"
)

// Transient reports whether err says that Redis could not be reached or
// could not serve for the moment, so that the same request, sent again
// later, may succeed: a connection refused, reset or closed (EOF), a
// network timeout, no free connection in go-redis's pool, and the server
// replies LOADING (a restart reading its data), TRYAGAIN, CLUSTERDOWN,
// MASTERDOWN and READONLY (a primary demoted by a failover, until the
// client finds the new one). A done context, a closed Client (redcoord's
// or go-redis's), and every reply of the scripts (a wrong type, a bad
// argument, unset permits, a WAIT shortfall) are not: trying again would
// get the same answer, or the caller no longer wants one.
func Transient(err error) bool {
	switch {
	case err == nil,
		errors.Is(err, errs.ErrClosed), errors.Is(err, redis.ErrClosed),
		errors.Is(err, errs.ErrWrongType), errors.Is(err, errs.ErrInvalidArgument),
		errors.Is(err, errs.ErrNotSet), errors.Is(err, errs.ErrNotReplicated),
		errors.Is(err, errs.ErrUpgrade), errors.Is(err, errs.ErrNotHeld):
		return false
	}
	var op *net.OpError
	switch {
	case errors.As(err, &op) && op.Op == "dial":
		// Never connected, whatever the dial's own timeout says.
		return true
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	case errors.As(err, &op),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, redis.ErrPoolTimeout):
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return redis.IsLoadingError(err) || redis.IsTryAgainError(err) || redis.IsClusterDownError(err) ||
		redis.IsMasterDownError(err) || redis.IsReadOnlyError(err)
}

// FirstBackoff is the pause after a wait's first failed try; each failure
// in a row doubles it, up to the wait's longest poll interval.
const FirstBackoff = 50 * time.Millisecond

// Retry paces the tries of one blocking wait through an outage. Its zero
// value is not usable; fill in every field but the unexported ones.
type Retry struct {
	Kind, Name string        // the primitive and its name, for the log and the observer
	MaxPoll    time.Duration // the back-off's cap
	Done       <-chan struct{}
	Logger     *slog.Logger
	Observe    obs.Func
	Rand       func(n time.Duration) time.Duration // the jitter's source; nil: math/rand/v2

	failures int             // tries failed in a row
	last     error           // the last of them
	pace     backoff.Backoff // the pauses; set at the first failure
}

// Failed records a try that failed with a Transient error and pauses
// before the next one, for a back-off that doubles from FirstBackoff up to
// MaxPoll, with a jitter of up to half (see backoff.Backoff), so that a
// restart does not meet every waiter at once. Each failure is reported to
// the observer (obs.Retrying); the log hears the first one at Warn level
// and then the 2nd, 4th, 8th... in a row, so that an outage of a minute is
// a handful of lines per wait, not one per try. It returns nil when the
// pause is over, or, when ctx is done or the Client closes first, an
// *Error that matches ctx.Err() (or ErrClosed) and names err.
func (r *Retry) Failed(ctx context.Context, err error) error {
	r.failures++
	r.last = err
	if r.pace.First == 0 {
		rnd := r.Rand
		if rnd == nil {
			rnd = rand.N[time.Duration]
		}
		r.pace = backoff.Backoff{First: min(FirstBackoff, r.MaxPoll), Max: r.MaxPoll, Rand: rnd}
	}
	pause := r.pace.Next()
	r.Observe.Emit(obs.Event{Kind: obs.Retrying, Primitive: r.Kind, Name: r.Name, Wait: pause,
		Count: r.failures, Err: err, Context: ctx})
	if r.failures&(r.failures-1) == 0 && r.Logger != nil {
		r.Logger.Warn("redcoord: Redis unreachable; the wait keeps trying", "primitive", r.Kind, "name", r.Name,
			"failures", r.failures, "retry", pause, "err", err)
	}
	if err := backoff.Sleep(ctx, pause, r.Done); err != nil {
		return r.Ended(err)
	}
	return nil
}

// Ok records a try that reached Redis: the outage, if any, is over.
func (r *Retry) Ok() {
	if r.failures == 0 {
		return
	}
	if r.Logger != nil {
		r.Logger.Info("redcoord: Redis answers again; the wait goes on", "primitive", r.Kind, "name", r.Name,
			"failures", r.failures)
	}
	r.failures, r.last = 0, nil
	r.pace.Reset()
}

// Failing reports whether the last try failed with a Transient error.
func (r *Retry) Failing() bool { return r.last != nil }

// Note records a failed try that is not tried again (the wait ended with
// it), so that Ended names it.
func (r *Retry) Note(err error) {
	r.failures++
	r.last = err
}

// Ended returns why a wait ended: cause (ctx.Err() or ErrClosed), as an
// *Error that names the last failure if the last try failed; cause itself
// otherwise.
func (r *Retry) Ended(cause error) error {
	if r.last == nil {
		return cause
	}
	return &Error{Cause: cause, Failures: r.failures, Last: errs.Words(r.last)}
}

// Error is why a wait ended while its tries failed: Cause, which it
// matches, and the last failure, named in its text only (the wait did not
// end because of it): "context deadline exceeded; Redis unreachable, 12
// tries in a row failed, the last with: script lock_acquire: dial tcp
// 127.0.0.1:6391: connect: connection refused".
type Error struct {
	Cause    error
	Failures int
	Last     string // the last failure's words (errs.Words)
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s; Redis unreachable, %d tries in a row failed, the last with: %s",
		errs.Words(e.Cause), e.Failures, e.Last)
}

// Unwrap returns Cause.
func (e *Error) Unwrap() error { return e.Cause }
