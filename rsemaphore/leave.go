package rsemaphore

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Semaphore's permits have neither owner nor lease: permits that an
// Acquire's request took, when its reply was lost and its leave cannot
// reach Redis, are gone for good. The leave is idempotent (Redis
// remembers the request id), so it is sent again, until its bounded
// context ends, while the failure is the connection's: a process cut off
// for less than that bound gets its permits back.

// leaveRetryMin and leaveRetryMax bound the pause between two tries of a
// leave; it doubles from the first to the second.
const (
	leaveRetryMin = 10 * time.Millisecond
	leaveRetryMax = 500 * time.Millisecond
)

// untilSent runs send until it succeeds, Redis answers it with an error,
// the connection pool is closed, or ctx ends; it returns send's last
// error.
func untilSent(ctx context.Context, send func(context.Context) error) error {
	pause := leaveRetryMin
	for {
		err := send(ctx)
		var reply redis.Error
		if err == nil || errors.As(err, &reply) || errors.Is(err, redis.ErrClosed) {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		pause = min(2*pause, leaveRetryMax)
	}
}
