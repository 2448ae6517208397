package rlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rlock"
)

// A name whose release fails keeps its hold, no longer renewed, and the
// MultiMutex still holds it: Unlock again releases it, and nothing is left
// in Redis.
func TestMultiFailedUnlockIsRetried(t *testing.T) {
	locktest.FaultBubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, sf *locktest.ScriptFaults, c *redcoord.Client) {
		ctx := context.Background()
		mm := rlock.NewMulti(c, []string{"a", "b"})
		require.NoError(t, mm.Lock(ctx))
		sf.FailBefore("lock_release")
		err := mm.Unlock(ctx)
		require.ErrorIs(t, err, locktest.ErrInjected)
		assert.Contains(t, err.Error(), "Unlock again")
		held := 0
		for _, name := range []string{"a", "b"} {
			if m.Exists("rc:{" + name + "}:lock") {
				held++
			}
		}
		assert.Equal(t, 1, held, "the name whose release failed is still held")
		require.NoError(t, mm.Unlock(ctx), "Unlock again releases it")
		assert.False(t, m.Exists("rc:{a}:lock") || m.Exists("rc:{b}:lock"))
		assert.ErrorIs(t, mm.Unlock(ctx), redcoord.ErrNotHeld)
	})
}

// A MultiMutex whose hold was lost locks afresh on Lock: a re-entry would
// report a lock that another owner holds.
func TestMultiLockAfterLossIsFresh(t *testing.T) {
	locktest.FaultBubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, sf *locktest.ScriptFaults, c *redcoord.Client) {
		ctx := context.Background()
		mm := rlock.NewMulti(c, []string{"a", "b"})
		require.NoError(t, mm.Lock(ctx))
		lost := mm.Lost()
		_, err := rlock.New(c, "a").ForceUnlock(ctx)
		require.NoError(t, err)
		time.Sleep(c.LeaseTTL())
		require.True(t, locktest.IsClosed(lost))
		other := rlock.New(c, "a")
		require.NoError(t, other.Lock(ctx))

		done := make(chan error, 1)
		go func() { done <- mm.Lock(ctx) }()
		time.Sleep(time.Second)
		assert.Empty(t, done, "it waits for a, which another owner holds")
		require.NoError(t, other.Unlock(ctx))
		require.NoError(t, <-done)
		tokens := mm.Tokens()
		assert.Positive(t, tokens["a"])
		assert.Positive(t, tokens["b"])
		require.NoError(t, mm.Unlock(ctx))
	})
}

// A server whose release fails keeps its grant and the RedLock still holds
// it: Unlock says so, and Unlock again releases it.
func TestRedLockFailedUnlockIsRetried(t *testing.T) {
	srvs := redServers(t, 3)
	ctx := context.Background()
	sf := &locktest.ScriptFaults{}
	cs := make([]*redcoord.Client, len(srvs))
	for i, s := range srvs {
		rdb := s.Client(t)
		if i == 2 {
			rdb.AddHook(sf)
		}
		cs[i] = locktest.NewClient(t, rdb)
	}
	rl := rlock.NewRedLock(cs, "job")
	require.NoError(t, rl.Lock(ctx))
	sf.FailBefore("lock_release")
	err := rl.Unlock(ctx)
	require.ErrorIs(t, err, locktest.ErrInjected)
	assert.Contains(t, err.Error(), "clients[2]")
	assert.Equal(t, int64(1), srvs[2].Client(t).Exists(ctx, "rc:{job}:lock").Val(), "still held on server 2")
	assert.Zero(t, srvs[0].Client(t).Exists(ctx, "rc:{job}:lock").Val(), "released on server 0")
	require.NoError(t, rl.Unlock(ctx), "Unlock again releases the rest")
	assert.Zero(t, srvs[2].Client(t).Exists(ctx, "rc:{job}:lock").Val())
	assert.ErrorIs(t, rl.Unlock(ctx), redcoord.ErrNotHeld)
}

// A closed Client counts as a failed server: with the other two of three
// the lock is taken and released.
func TestRedLockClosedClient(t *testing.T) {
	srvs := redServers(t, 3)
	ctx := context.Background()
	cs := redClients(t, srvs)
	rl := rlock.NewRedLock(cs, "job")
	require.NoError(t, cs[2].Close(ctx))
	require.NoError(t, rl.Lock(ctx))
	require.NoError(t, rl.Unlock(ctx))
	for i := range 2 {
		assert.Zero(t, srvs[i].Client(t).Exists(ctx, "rc:{job}:lock").Val(), "server %d", i)
	}
	require.NoError(t, cs[1].Close(ctx))
	assert.ErrorIs(t, rl.Lock(ctx), redcoord.ErrClosed, "a majority of the Clients closed")
}

// A MultiMutex attempt runs one request at a time, so no answer of a
// failed attempt comes after it: a group whose reply is lost is undone
// before Lock returns, and the next Lock takes every name afresh (count
// 1), not on top of what the failed attempt may have left.
func TestMultiLostReplyLeavesNothingForNextLock(t *testing.T) {
	locktest.FaultBubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, sf *locktest.ScriptFaults, c *redcoord.Client) {
		ctx := context.Background()
		mm := rlock.NewMulti(c, []string{"a", "b"})
		sf.FailAfter("lock_multi")
		require.ErrorIs(t, mm.Lock(ctx), locktest.ErrInjected)
		assert.False(t, m.Exists("rc:{a}:lock") || m.Exists("rc:{b}:lock"), "the applied group was undone")
		require.NoError(t, mm.Lock(ctx))
		for _, name := range []string{"a", "b"} {
			assert.Equal(t, "1", m.HGet("rc:{"+name+"}:lock", "c"), "%s: a fresh hold", name)
			ok, err := rlock.New(c, name).TryLock(ctx)
			require.NoError(t, err)
			assert.False(t, ok, "%s is held", name)
		}
		time.Sleep(c.LeaseTTL())
		assert.False(t, locktest.IsClosed(mm.Lost()), "renewed")
		require.NoError(t, mm.Unlock(ctx))
		assert.False(t, m.Exists("rc:{a}:lock") || m.Exists("rc:{b}:lock"))
	})
}

// Once a re-entered MultiMutex's Lost has closed, Unlock reports the loss
// at once, as a single lock's does (see Lost at redcoord.Locker), and
// releases the names not lost: the re-entry's Unlock is not a nil that
// leaves them held, and the hold holds nothing any more.
func TestMultiReenteredLossUnlock(t *testing.T) {
	locktest.FaultBubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, sf *locktest.ScriptFaults, c *redcoord.Client) {
		ctx := context.Background()
		mm := rlock.NewMulti(c, []string{"a", "b"})
		require.NoError(t, mm.Lock(ctx))
		hctx, cancel := mm.Context(ctx)
		defer cancel()
		require.NoError(t, mm.Lock(hctx), "a re-entry")
		_, err := rlock.New(c, "a").ForceUnlock(ctx)
		require.NoError(t, err)
		time.Sleep(c.LeaseTTL())
		require.True(t, locktest.IsClosed(mm.Lost()))
		assert.Nil(t, mm.Tokens(), "a lost hold is not held")
		err = mm.Unlock(ctx)
		assert.ErrorIs(t, err, redcoord.ErrLeaseLost)
		assert.False(t, m.Exists("rc:{b}:lock"), "the name not lost is released")
		assert.ErrorIs(t, mm.Unlock(ctx), redcoord.ErrLeaseLost, "until a fresh hold")
		require.NoError(t, mm.Lock(ctx))
		require.NoError(t, mm.Unlock(ctx))
		assert.ErrorIs(t, mm.Unlock(ctx), redcoord.ErrNotHeld)
	})
}
