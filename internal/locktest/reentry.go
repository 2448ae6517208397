package locktest

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
)

// ReentryAfterLoss checks that a re-entry whose reply comes after the hold
// it re-entered was found lost (its fixed lease's timer fired while the
// request was on its way) fails with ErrLeaseLost and ErrNotAcquired, and
// is not recorded as a fresh hold: the re-entry set no lease, so the hold
// ends in Redis with the fixed lease and another handle then takes the
// name. A reply that comes while Redis still has the hold has its re-entry
// given back.
func ReentryAfterLoss(t *testing.T, k Kind) {
	t.Run("gone", func(t *testing.T) { reentryAfterLoss(t, k, 200*time.Millisecond) })
	t.Run("still there", func(t *testing.T) { reentryAfterLoss(t, k, 80*time.Millisecond) })
}

// reentryAfterLoss re-enters 150ms before a 10s fixed lease ends in
// Redis, with the reply delay late: after the handle's timer (100ms before
// the end: lease.Margin) in both cases, after the server's expiry too when
// late is over 150ms.
func reentryAfterLoss(t *testing.T, k Kind, late time.Duration) {
	FaultBubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, sf *ScriptFaults, c *redcoord.Client) {
		ctx := context.Background()
		x, y := k.New(c, "n"), k.New(c, "n")
		require.NoError(t, x.Lock(ctx)) // loads the scripts
		require.NoError(t, x.Unlock(ctx))

		start := time.Now()
		require.NoError(t, x.LockWithLease(ctx, 10*time.Second))
		lost := x.Lost()
		hctx, cancel := x.Context(ctx)
		defer cancel()
		time.Sleep(9850 * time.Millisecond)
		sf.DelayReply(k.Acquire, late)
		err := x.Lock(hctx)
		require.Equal(t, 9850*time.Millisecond+late, time.Since(start), "the reply came late")
		assert.ErrorIs(t, err, redcoord.ErrLeaseLost, "the hold re-entered was lost before the reply")
		assert.ErrorIs(t, err, redcoord.ErrNotAcquired)
		assert.True(t, IsClosed(lost), "Lost closed with the fixed lease")
		assert.Zero(t, x.Token(), "no hold recorded")
		if late < 150*time.Millisecond {
			assert.Equal(t, int64(1), k.Count(m, "n", x.Owner()), "the re-entry was given back")
		}
		time.Sleep(time.Until(start.Add(10*time.Second + time.Millisecond)))
		synctest.Wait()
		assert.Zero(t, k.Count(m, "n", x.Owner()), "the hold ended with its fixed lease")

		yctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		require.NoError(t, y.Lock(yctx), "another handle takes the name")
		assert.True(t, IsClosed(x.Lost()), "while the first handle's Lost is closed")
		assert.ErrorIs(t, x.Unlock(ctx), redcoord.ErrLeaseLost)
		require.NoError(t, y.Unlock(ctx))
	})
}
