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

// A permit whose Release failed is no longer renewed, whatever became of
// the request: an Release again may still release it; otherwise it ends
// with its lease (or at the end of its fixed lease), and Lost closes when
// that lease may end.
func TestFaultFailedRelease(t *testing.T) {
	locktest.FaultBubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, sf *locktest.ScriptFaults, c *redcoord.Client) {
		ctx := context.Background()
		s := rsemaphore.NewExpirable(c, "n")
		_, err := s.TrySetPermits(ctx, 1)
		require.NoError(t, err)
		held := func() int64 {
			n, err := s.Acquired(ctx)
			require.NoError(t, err)
			return n
		}

		p, err := s.Acquire(ctx, rsemaphore.AcquireOptions{})
		require.NoError(t, err)
		sf.FailBefore("xsem_release")
		require.ErrorIs(t, s.Release(ctx, p), locktest.ErrInjected)
		assert.Equal(t, int64(1), held(), "not released")
		require.NoError(t, s.Release(ctx, p), "released by a Release again")
		assert.Zero(t, held())
		assert.False(t, locktest.IsClosed(p.Lost()))

		p, err = s.Acquire(ctx, rsemaphore.AcquireOptions{})
		require.NoError(t, err)
		sf.FailBefore("xsem_release")
		require.ErrorIs(t, s.Release(ctx, p), locktest.ErrInjected)
		time.Sleep(c.LeaseTTL())
		synctest.Wait()
		assert.True(t, locktest.IsClosed(p.Lost()), "not renewed: lost when its lease may end")
		assert.Zero(t, held(), "expired in Redis")
		assert.ErrorIs(t, s.Release(ctx, p), redcoord.ErrLeaseLost)

		p, err = s.Acquire(ctx, rsemaphore.AcquireOptions{})
		require.NoError(t, err)
		sf.FailAfter("xsem_release")
		require.ErrorIs(t, s.Release(ctx, p), locktest.ErrInjected)
		time.Sleep(c.LeaseTTL())
		synctest.Wait()
		assert.True(t, locktest.IsClosed(p.Lost()), "not renewed: lost when its lease may end")
		assert.ErrorIs(t, s.Release(ctx, p), redcoord.ErrLeaseLost)

		p, err = s.Acquire(ctx, rsemaphore.AcquireOptions{Lease: 5 * time.Second})
		require.NoError(t, err)
		sf.FailBefore("xsem_release")
		require.ErrorIs(t, s.Release(ctx, p), locktest.ErrInjected)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.True(t, locktest.IsClosed(p.Lost()), "a fixed lease still ends on time")
	})
}

// Once a permit's Lost has closed, Release says ErrLeaseLost, even when
// Redis still had the permit (its expiry came later than the holder's
// clock said), and releases it.
func TestFaultLostPermitRelease(t *testing.T) {
	locktest.FaultBubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, sf *locktest.ScriptFaults, c *redcoord.Client) {
		ctx := context.Background()
		s := rsemaphore.NewExpirable(c, "n")
		_, err := s.TrySetPermits(ctx, 1)
		require.NoError(t, err)
		p, err := s.Acquire(ctx, rsemaphore.AcquireOptions{Lease: 5 * time.Second})
		require.NoError(t, err)
		leases := "rc:{n}:sem-leases"
		score, err := m.ZScore(leases, p.ID)
		require.NoError(t, err)
		_, err = m.ZAdd(leases, score+1000, p.ID)
		require.NoError(t, err)
		for _, key := range m.Keys() {
			if ttl := m.TTL(key); ttl > 0 {
				m.SetTTL(key, ttl+time.Second)
			}
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		require.True(t, locktest.IsClosed(p.Lost()))
		n, err := s.Acquired(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(1), n, "Redis still has it")
		assert.ErrorIs(t, s.Release(ctx, p), redcoord.ErrLeaseLost)
		n, err = s.Acquired(ctx)
		require.NoError(t, err)
		assert.Zero(t, n, "released all the same")
	})
}

// A permit whose Extend was applied, its reply lost, is reported lost
// before the lease that Extend may have set ends in Redis; a later Extend
// that succeeds sets the lease it is watched by.
func TestFaultUnknownExtend(t *testing.T) {
	locktest.FaultBubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, sf *locktest.ScriptFaults, c *redcoord.Client) {
		ctx := context.Background()
		s := rsemaphore.NewExpirable(c, "n")
		_, err := s.TrySetPermits(ctx, 1)
		require.NoError(t, err)
		p, err := s.Acquire(ctx, rsemaphore.AcquireOptions{})
		require.NoError(t, err)
		sf.FailAfter("xsem_extend")
		require.ErrorIs(t, s.Extend(ctx, p, 5*time.Second), locktest.ErrInjected)
		time.Sleep(4900 * time.Millisecond)
		synctest.Wait()
		assert.False(t, locktest.IsClosed(p.Lost()))
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		assert.True(t, locktest.IsClosed(p.Lost()), "lost before the lease set in Redis ends")

		p, err = s.Acquire(ctx, rsemaphore.AcquireOptions{})
		require.NoError(t, err)
		sf.FailAfter("xsem_extend")
		require.ErrorIs(t, s.Extend(ctx, p, 5*time.Second), locktest.ErrInjected)
		require.NoError(t, s.Extend(ctx, p, time.Minute))
		time.Sleep(50 * time.Second)
		synctest.Wait()
		assert.False(t, locktest.IsClosed(p.Lost()), "the Extend that succeeded replaced the unknown one")
	})
}
