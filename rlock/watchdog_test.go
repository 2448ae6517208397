package rlock_test

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
	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
)

// bubble runs f in a synctest bubble with a miniredis on the bubble's clock
// and a Client on it (lease TTL 30s: the watchdog ticks every 10s).
func bubble(t *testing.T, f func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, rt *redistest.RoundTrips, c *redcoord.Client)) {
	synctest.Test(t, func(t *testing.T) {
		m, opts := redistest.Bubble()
		defer m.Close()
		rdb := redis.NewClient(opts)
		defer rdb.Close()
		rt := &redistest.RoundTrips{}
		rdb.AddHook(rt)
		c, err := redcoord.New(rdb)
		require.NoError(t, err)
		defer func() { require.NoError(t, c.Close(context.Background())) }()
		f(t, m, rdb, rt, c)
	})
}

func TestWatchdogKeepsHoldForAnHour(t *testing.T) {
	bubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, rt *redistest.RoundTrips, c *redcoord.Client) {
		ctx := context.Background()
		mu := rlock.New(c, "n")
		require.NoError(t, mu.Lock(ctx))
		lost := mu.Lost()
		token := mu.Token()
		assert.Greater(t, token, uint64(0))
		rt.Reset()

		// 120 lease TTLs, a second short of the hour's last tick: a tick
		// due at the instant this Sleep ends would race with the count.
		time.Sleep(time.Hour - time.Second)
		h, ok, err := mu.Holder(ctx)
		require.NoError(t, err)
		require.True(t, ok, "the hold expired despite the watchdog")
		assert.Equal(t, mu.Owner(), h.Owner)
		assert.Equal(t, token, h.Token, "renewals keep the token")
		assert.Greater(t, h.Remaining, 2*c.LeaseTTL()/3-time.Second)
		assert.False(t, locktest.IsClosed(lost))
		// The renewal's and Holder's first EVALSHA each found no script,
		// loaded it (SCRIPT LOAD) and were sent again.
		assert.Equal(t, int64(2), rt.Commands("script"))
		assert.Equal(t, int64(359), rt.Commands("evalsha")-1-2, "one renewal per 10s tick (and the Holder call)")

		require.NoError(t, mu.Unlock(ctx))
		rt.Reset()
		time.Sleep(time.Hour)
		assert.Zero(t, rt.Load(), "a released hold is never renewed again")
		assert.False(t, locktest.IsClosed(lost), "a released hold is not lost")
	})
}

func TestWatchdogReportsDeletedHold(t *testing.T) {
	bubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, rt *redistest.RoundTrips, c *redcoord.Client) {
		ctx := context.Background()
		mu := rlock.New(c, "n")
		require.NoError(t, mu.Lock(ctx))
		lost := mu.Lost()
		time.Sleep(3 * time.Second) // between ticks
		m.Del("rc:{n}:lock")
		time.Sleep(c.LeaseTTL()/3 + time.Millisecond) // one renew interval
		synctest.Wait()
		assert.True(t, locktest.IsClosed(lost), "Lost not closed within one renew interval")
		assert.Zero(t, mu.Token(), "the handle no longer believes it holds")
		err := mu.Unlock(ctx)
		assert.ErrorIs(t, err, redcoord.ErrNotHeld)
	})
}

func TestFixedLeaseExpires(t *testing.T) {
	bubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, rt *redistest.RoundTrips, c *redcoord.Client) {
		ctx := context.Background()
		mu := rlock.New(c, "n")
		const fixed = 5 * time.Second
		require.NoError(t, mu.LockWithLease(ctx, fixed))
		lost := mu.Lost()
		token := mu.Token()
		h, ok, err := mu.Holder(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		assert.True(t, h.Fixed)
		assert.Equal(t, 5*time.Second, h.Lease)
		rt.Reset()

		// Lost closes lease.Margin before the lease ends, as Redis may end it
		// that early by its own clock; Redis expires the key at the lease.
		time.Sleep(fixed - lease.Margin(fixed) - time.Millisecond)
		synctest.Wait()
		assert.False(t, locktest.IsClosed(lost))
		locked, err := mu.IsLocked(ctx)
		require.NoError(t, err)
		assert.True(t, locked)
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		assert.True(t, locktest.IsClosed(lost), "Lost not closed a margin before the fixed lease ended")
		locked, err = mu.IsLocked(ctx)
		require.NoError(t, err)
		assert.True(t, locked, "Redis has the key until the lease ends")
		time.Sleep(lease.Margin(fixed))
		locked, err = mu.IsLocked(ctx)
		require.NoError(t, err)
		assert.False(t, locked, "Redis expired the key")
		assert.Equal(t, int64(3), rt.Commands("evalsha"), "a fixed lease is never renewed (3 = IsLocked calls)")

		other := rlock.New(c, "n")
		require.NoError(t, other.Lock(ctx), "the expired lock is free")
		assert.Greater(t, other.Token(), token)
		require.NoError(t, other.Unlock(ctx))
	})
}

// Renewals that fail (the server unreachable) for longer than the lease TTL
// mean the hold is lost: Redis has expired it by then.
func TestWatchdogGivesUpAfterTTL(t *testing.T) {
	bubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, rt *redistest.RoundTrips, c *redcoord.Client) {
		ctx := context.Background()
		mu := rlock.New(c, "n")
		require.NoError(t, mu.Lock(ctx))
		lost := mu.Lost()
		m.SetError("LOADING Redis is loading the dataset in memory")
		time.Sleep(c.LeaseTTL() - time.Second)
		synctest.Wait()
		assert.False(t, locktest.IsClosed(lost), "lost before its TTL ran out")
		time.Sleep(c.LeaseTTL()/3 + time.Second)
		synctest.Wait()
		assert.True(t, locktest.IsClosed(lost), "Lost not closed one renew interval after the TTL ran out")
		m.SetError("")
	})
}
