// Package backoff paces the tries of a loop that waits for Redis or for a
// holder: the pause between two tries (Backoff), and the sleep that a done
// context or a closed Client cuts short (Sleep).
package backoff

import (
	"context"
	"time"

	"github.com/redcoord/redcoord/internal/errs"
)

// Backoff is the pause between the tries of one loop. The first pause's
// back-off is First (which Max does not cap); each pause doubles it, up to
// Max, and Reset starts again from First. With Rand set, a pause is drawn
// from [b/2, b] for a back-off b, so that waiters that failed together do
// not try again together; without it, a pause is b. A pause is never
// shorter than min(First, Max)/2, so a loop that a context of length T
// ends makes at most 1 + 2T/min(First, Max) tries: the caller bounds the
// loop in time (ctx, or a stop condition of its own) and Backoff bounds
// it in count. The zero value is not usable: set First and Max.
type Backoff struct {
	First, Max time.Duration
	Rand       func(n time.Duration) time.Duration // a duration in [0, n); nil: no jitter

	next time.Duration // the next pause's back-off, before its jitter; 0: First
}

// Next returns the next pause and doubles the back-off.
func (b *Backoff) Next() time.Duration {
	if b.next == 0 {
		b.next = b.First
	}
	pause := b.next
	if b.Rand != nil {
		pause = pause/2 + b.Rand(pause/2+1)
	}
	b.next = min(2*b.next, b.Max)
	return pause
}

// Reset makes the next pause start again from First.
func (b *Backoff) Reset() { b.next = 0 }

// Sleep waits for d. It returns nil when d is over, ctx.Err() when ctx is
// done first, and errs.ErrClosed when closed (a Client's end; nil: never)
// is closed first.
func Sleep(ctx context.Context, d time.Duration, closed <-chan struct{}) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-closed:
		return errs.ErrClosed
	}
}
