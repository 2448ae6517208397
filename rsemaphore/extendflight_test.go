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
	"github.com/redcoord/redcoord/rsemaphore"
)

// A permit whose Extend is slow to reach Redis is not renewed while the
// request is on its way, so its lease may end in Redis before the Extend
// is applied: Lost closes when that lease may end, not when the Extend's
// reply comes.
func TestLostWhileExtendOnItsWay(t *testing.T) {
	locktest.FaultBubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, sf *locktest.ScriptFaults, c *redcoord.Client) {
		ctx := context.Background()
		s := rsemaphore.NewExpirable(c, "n")
		_, err := s.TrySetPermits(ctx, 1)
		require.NoError(t, err)
		p, err := s.Acquire(ctx, rsemaphore.AcquireOptions{})
		require.NoError(t, err)
		ttl := c.LeaseTTL()

		sf.DelayRequest("xsem_extend", ttl+10*time.Second)
		done := make(chan error, 1)
		go func() { done <- s.Extend(ctx, p, time.Minute) }()
		time.Sleep(ttl - ttl/100 - time.Millisecond)
		synctest.Wait()
		assert.False(t, locktest.IsClosed(p.Lost()), "lost before the lease may end")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		assert.True(t, locktest.IsClosed(p.Lost()), "the lease the Extend found may have ended in Redis")
		assert.ErrorIs(t, <-done, redcoord.ErrLeaseLost)
	})
}

// An Extend to a lease shorter than what is left may be applied at once
// while its reply is slow: Lost closes when that shorter lease may end.
func TestLostWhenShorterExtendMayHaveApplied(t *testing.T) {
	locktest.FaultBubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, sf *locktest.ScriptFaults, c *redcoord.Client) {
		ctx := context.Background()
		s := rsemaphore.NewExpirable(c, "n")
		_, err := s.TrySetPermits(ctx, 1)
		require.NoError(t, err)
		p, err := s.Acquire(ctx, rsemaphore.AcquireOptions{})
		require.NoError(t, err)
		short := c.LeaseTTL() / 4

		sf.DelayReply("xsem_extend", c.LeaseTTL()+10*time.Second)
		done := make(chan error, 1)
		go func() { done <- s.Extend(ctx, p, short) }()
		time.Sleep(short - short/100 - time.Millisecond)
		synctest.Wait()
		assert.False(t, locktest.IsClosed(p.Lost()), "lost before the shorter lease may end")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		assert.True(t, locktest.IsClosed(p.Lost()), "the Extend may have set the shorter lease in Redis")
		<-done
	})
}
