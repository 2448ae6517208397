package acquire

import (
	"context"
	"errors"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/outage"
)

// try makes one attempt. A blocking acquire's attempt that fails with an
// outage's error (outage.Transient: Redis down, restarting, failing over)
// is sent again after r's pause, until Redis answers or the wait ends; a
// Once attempt, and any other error, fails at once. What is sent again is
// the same request (the Trier's request id), which every acquire script
// applies once: a try that Redis applied but whose reply was lost is found
// by the next, as a hold already taken, a queue entry already made, a
// grant already given. The wake's payload is given again too: what it
// announced (a grant) is confirmed by the try, or found gone. A wait whose
// ctx ends, or whose Client closes, while the tries fail returns an error
// matching ErrNotAcquired and ctx.Err() (or ErrClosed) that names the last
// failure.
func try[T any](ctx context.Context, s Spec, t Trier[T], w Wake, r *outage.Retry) (T, Attempt, error) {
	for {
		got, a, err := t.Try(ctx, w)
		switch {
		case err == nil:
			r.Ok()
			return got, a, nil
		case ctx.Err() != nil && (r.Failing() || !s.Once && outage.Transient(err)):
			// The wait ended while Redis was failing it: not acquired
			// because of ctx, naming the last failure that was not the
			// ctx itself cutting the try short.
			if !errors.Is(err, ctx.Err()) && outage.Transient(err) {
				r.Note(err)
			}
			return got, Attempt{}, ended(r.Ended(ctx.Err()))
		case errors.Is(err, errs.ErrClosed) && !errors.Is(err, errs.ErrNotAcquired):
			// The Client closed while the try was on its way: a wait in
			// progress that Close ends is not acquired, as at its select.
			return got, Attempt{}, ended(err)
		case s.Once || ctx.Err() != nil || !outage.Transient(err):
			return got, Attempt{}, err
		}
		if err := r.Failed(ctx, err); err != nil {
			return got, Attempt{}, ended(err)
		}
	}
}
