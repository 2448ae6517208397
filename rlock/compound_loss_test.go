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
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
)

// A MultiMutex's hold is lost with its first name: its Lost closes at the
// renewal that finds that name gone, the one that finds a single lock's
// hold gone at the same time.
func TestMultiLostWithFirstName(t *testing.T) {
	locktest.FaultBubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, sf *locktest.ScriptFaults, c *redcoord.Client) {
		ctx := context.Background()
		mm := rlock.NewMulti(c, []string{"a", "b", "c"})
		require.NoError(t, mm.Lock(ctx))
		single := rlock.New(c, "z")
		require.NoError(t, single.Lock(ctx))
		hctx, cancel := mm.Context(ctx)
		defer cancel()
		time.Sleep(c.LeaseTTL() / 5)
		m.Del("rc:{b}:lock")
		m.Del("rc:{z}:lock")
		for start := time.Now(); !locktest.IsClosed(single.Lost()); time.Sleep(time.Millisecond) {
			require.Less(t, time.Since(start), c.LeaseTTL(), "the single lock's loss is found")
		}
		synctest.Wait()
		assert.True(t, locktest.IsClosed(mm.Lost()), "lost with its first name")
		assert.ErrorIs(t, context.Cause(hctx), redcoord.ErrLeaseLost)
		assert.ErrorIs(t, mm.Unlock(ctx), redcoord.ErrLeaseLost)
		assert.ErrorIs(t, single.Unlock(ctx), redcoord.ErrLeaseLost)
	})
}

// A RedLock's hold is lost with the server that leaves fewer than a
// majority holding it, not later: at once for a forced unlock its Client
// hears of, and at the next renewal otherwise (a Client whose listening
// for forced-unlock notices the server has not confirmed yet).
func TestRedLockLostWithMajority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		var cs []*redcoord.Client
		for range 3 {
			m, opts := redistest.Bubble()
			defer m.Close()
			rdb := redis.NewClient(opts)
			defer rdb.Close()
			c, err := redcoord.New(rdb)
			require.NoError(t, err)
			defer c.Close(ctx)
			cs = append(cs, c)
		}
		rl := rlock.NewRedLock(cs, "job")
		require.NoError(t, rl.Lock(ctx))
		hctx, cancel := rl.Context(ctx)
		defer cancel()
		_, err := rlock.New(cs[0], "job").ForceUnlock(ctx)
		require.NoError(t, err)
		synctest.Wait()
		assert.False(t, locktest.IsClosed(rl.Lost()), "a majority still holds")
		require.NoError(t, hctx.Err())
		_, err = rlock.New(cs[1], "job").ForceUnlock(ctx)
		require.NoError(t, err)
		time.Sleep(cs[1].LeaseTTL()/3 + time.Millisecond) // one renewal tick
		synctest.Wait()
		assert.True(t, locktest.IsClosed(rl.Lost()), "lost with the second server")
		assert.ErrorIs(t, context.Cause(hctx), redcoord.ErrLeaseLost)
		assert.ErrorIs(t, rl.Unlock(ctx), redcoord.ErrLeaseLost)
	})
}

// A name taken while Lock waited for it alone, and lost before the other
// names were taken with it (forced while their reply was slow), makes Lock
// start again: it never returns with a name lost.
func TestMultiLockRetakesNameLost(t *testing.T) {
	locktest.FaultBubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, sf *locktest.ScriptFaults, c *redcoord.Client) {
		ctx := context.Background()
		mm := rlock.NewMulti(c, []string{"a", "b"})
		first := mm.Names()[0]
		other := rlock.New(c, first)
		require.NoError(t, other.Lock(ctx))
		done := make(chan error, 1)
		go func() { done <- mm.Lock(ctx) }()
		synctest.Wait() // it waits for the first name alone
		sf.DelayReply("lock_multi", time.Second)
		require.NoError(t, other.Unlock(ctx))
		synctest.Wait() // it took the first name, then both, and waits for the reply
		ok, err := other.ForceUnlock(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, <-done)
		assert.False(t, locktest.IsClosed(mm.Lost()), "no name was lost when Lock returned")
		hctx, cancel := mm.Context(ctx)
		defer cancel()
		require.NoError(t, hctx.Err())
		for _, name := range mm.Names() {
			assert.True(t, m.Exists("rc:{"+name+"}:lock"), "%s is held", name)
			assert.Positive(t, mm.Tokens()[name], name)
		}
		time.Sleep(2 * c.LeaseTTL())
		assert.False(t, locktest.IsClosed(mm.Lost()), "every name is renewed")
		require.NoError(t, mm.Unlock(ctx))
	})
}
