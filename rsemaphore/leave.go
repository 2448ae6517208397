package rsemaphore

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/backoff"
)

// A Semaphore's permits have neither owner nor lease: permits that an
// Acquire's request took, when its reply was lost and its leave cannot
// reach Redis, are gone for good. The leave is idempotent (Redis
// remembers the request id), so it is sent again, until its bounded
// context ends, while the failure is the connection's: a process cut off
// for less than that bound gets its permits back.

// untilSent runs send until it succeeds, Redis answers it with an error,
// the connection pool is closed, or ctx ends; it returns send's last
// error. The pause between two sends doubles from 10ms up to 500ms,
// without jitter.
func untilSent(ctx context.Context, send func(context.Context) error) error {
	pace := backoff.Backoff{First: 10 * time.Millisecond, Max: 500 * time.Millisecond}
	for {
		err := send(ctx)
		var reply redis.Error
		if err == nil || errors.As(err, &reply) || errors.Is(err, redis.ErrClosed) {
			return err
		}
		if backoff.Sleep(ctx, pace.Next(), nil) != nil {
			return err
		}
	}
}
