package hold

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/lease"
)

// Confirm returns when the lease of a successful acquire sent at since is
// to be counted from. A hold's lease is counted from when its request was
// sent, the latest moment Redis can have set it by the holder's clock; a
// reply that arrives after that lease could have ended (Redis stalled
// between the request and its reply: paused, swapping, a long script)
// would leave a hold reported lost as soon as it is taken, while Redis
// keeps it for a whole lease from when it ran the script. So a late hold
// renewed by the watchdog is confirmed by one renewal at once, r, and
// counted from when that was sent. A late fixed lease cannot be renewed
// without changing it: it is an error, as is a confirmation that fails or
// is late too; the caller then gives the hold back with its leave script.
// rdb is the acquire's Writer: with WithWaitReplicas, a confirming renewal
// that too few replicas acknowledged fails the confirmation too, as the
// acquire's own shortfall would have (see core.Writer).
func Confirm(ctx context.Context, rdb redis.Scripter, r lease.Renewal, since time.Time, length time.Duration, fixed bool) (time.Time, error) {
	life := length - lease.Margin(length)
	took := time.Since(since)
	if took < life {
		return since, nil
	}
	if fixed {
		return since, fmt.Errorf("%w: Redis answered %v after the request, when the fixed lease of %v may have ended: the hold was given back",
			errs.ErrNotAcquired, took.Round(time.Millisecond), length)
	}
	sent := time.Now()
	n, err := r.Script.Run(ctx, rdb, r.Keys, r.Args...).Int64()
	if err == nil && n != 1 {
		err = errs.ErrLeaseLost
	}
	if err == nil && time.Since(sent) >= life {
		err = fmt.Errorf("its renewal was answered %v after it was sent", time.Since(sent).Round(time.Millisecond))
	}
	if err != nil {
		return since, fmt.Errorf("%w: Redis answered %v after the request, when the lease of %v may have ended, and the hold could not be confirmed: %w",
			errs.ErrNotAcquired, took.Round(time.Millisecond), length, err)
	}
	return sent, nil
}
