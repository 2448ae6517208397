package rsemaphore_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rlock"
	"github.com/redcoord/redcoord/rsemaphore"
)

// While the Client's last blocked Acquire of a semaphore drops the
// Client's registration, slowly (a slow link), the Client's acquires of
// other names go on: a Lock with a 50ms context takes a free lock at once.
// (A Lock that waited for a mutex the drop holds would stop the bubble's
// clock, and with it the drop: the test would hang until go test's
// -timeout.)
func TestSlowDropHoldsUpNoOtherName(t *testing.T) {
	locktest.FaultBubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, sf *locktest.ScriptFaults, c *redcoord.Client) {
		ctx := context.Background()
		hc, err := redcoord.New(rdb)
		require.NoError(t, err)
		defer func() { require.NoError(t, hc.Close(ctx)) }()
		holder := rsemaphore.New(hc, "n")
		require.NoError(t, holder.SetPermits(ctx, 1))
		require.NoError(t, holder.Acquire(ctx, 1))

		// The waiter takes the permit with a try that keeps the Client's
		// registration for another Acquire, which leaves while that try
		// is in flight: the waiter's end drops the registration.
		waiter, other := rsemaphore.New(c, "n"), rsemaphore.New(c, "n")
		acquired := make(chan error, 1)
		go func() { acquired <- waiter.Acquire(ctx, 1) }()
		synctest.Wait() // registered
		octx, cancel := context.WithCancel(ctx)
		left := make(chan error, 1)
		go func() { left <- other.Acquire(octx, 1) }()
		synctest.Wait() // queued behind the waiter, without a try
		sf.DelayReply("sem_acquire", 100*time.Millisecond)
		require.NoError(t, holder.Release(ctx, 1)) // wakes the waiter
		synctest.Wait()
		cancel()
		require.ErrorIs(t, <-left, context.Canceled)
		sf.DelayRequest("sem_leave", 2*time.Second) // the waiter's drop
		time.Sleep(101 * time.Millisecond)
		synctest.Wait()
		require.Empty(t, acquired, "the drop is in flight")

		lctx, cancelLock := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancelLock()
		start := time.Now()
		mu := rlock.New(c, "other")
		require.NoError(t, mu.Lock(lctx), "a free lock of another name is taken within the context")
		assert.Less(t, time.Since(start), 50*time.Millisecond)
		require.NoError(t, mu.Unlock(ctx))
		require.NoError(t, <-acquired)
		require.NoError(t, waiter.Release(ctx, 1))
	})
}
