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

// A hold is all of its names: an Unlock that fails to release one name
// releases the others and ends the hold before it returns, Context and
// Lost with it, while another owner may take a name it released. The name
// left ends with its lease, unless Unlock again releases it.
func TestMultiFailedUnlockEndsHold(t *testing.T) {
	locktest.FaultBubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, sf *locktest.ScriptFaults, c *redcoord.Client) {
		ctx := context.Background()
		mm := rlock.NewMulti(c, []string{"a", "b"})
		require.NoError(t, mm.Lock(ctx))
		hctx, cancel := mm.Context(ctx)
		defer cancel()
		lost := mm.Lost()
		sf.FailBefore("lock_release")
		err := mm.Unlock(ctx)
		require.ErrorIs(t, err, locktest.ErrInjected)
		assert.Contains(t, err.Error(), "Unlock again")
		require.Error(t, hctx.Err(), "the hold's Context ends with the Unlock")
		assert.ErrorIs(t, context.Cause(hctx), redcoord.ErrNotHeld, "ended as the Unlock was sent")
		assert.True(t, locktest.IsClosed(lost), "Lost closes with the Unlock")
		assert.Nil(t, mm.Tokens(), "nothing is held")
		var released, left string
		for _, name := range mm.Names() {
			if m.Exists("rc:{" + name + "}:lock") {
				left = name
			} else {
				released = name
			}
		}
		require.NotEmpty(t, released)
		require.NotEmpty(t, left, "the name whose release failed is still held")
		other := rlock.New(c, released)
		ok, err := other.TryLock(ctx)
		require.NoError(t, err)
		require.True(t, ok, "another owner takes the released name")
		require.ErrorIs(t, mm.Unlock(ctx), redcoord.ErrLeaseLost, "Unlock again releases the name left")
		assert.False(t, m.Exists("rc:{"+left+"}:lock"))
		assert.ErrorIs(t, mm.Unlock(ctx), redcoord.ErrLeaseLost, "until a fresh hold")
		require.NoError(t, other.Unlock(ctx))
		require.NoError(t, mm.Lock(ctx))
		require.NoError(t, mm.Unlock(ctx))
		assert.ErrorIs(t, mm.Unlock(ctx), redcoord.ErrNotHeld)
	})
}

// A Lock after an Unlock that failed to release a name, without Unlock
// again, releases that name's hold (no longer renewed) and takes it
// afresh: the new hold is renewed, not lost when the old lease ends.
func TestMultiLockAfterFailedUnlock(t *testing.T) {
	locktest.FaultBubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, sf *locktest.ScriptFaults, c *redcoord.Client) {
		ctx := context.Background()
		mm := rlock.NewMulti(c, []string{"a", "b"})
		require.NoError(t, mm.Lock(ctx))
		sf.FailBefore("lock_release")
		require.ErrorIs(t, mm.Unlock(ctx), locktest.ErrInjected)
		require.NoError(t, mm.Lock(ctx))
		for _, name := range mm.Names() {
			assert.Equal(t, "1", m.HGet("rc:{"+name+"}:lock", "c"), "%s: a fresh hold", name)
		}
		time.Sleep(2 * c.LeaseTTL())
		assert.False(t, locktest.IsClosed(mm.Lost()), "every name is renewed")
		require.NoError(t, mm.Unlock(ctx))
		assert.False(t, m.Exists("rc:{a}:lock") || m.Exists("rc:{b}:lock"))
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

// A RedLock's hold ends with an Unlock that fails to release it on one
// server: its Context is done and Lost closed when Unlock returns, while a
// RedLock of another process takes the lock on the servers it was
// released on. Unlock again releases the grant left.
func TestRedLockFailedUnlockEndsHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		sf := &locktest.ScriptFaults{}
		var ms []*miniredis.Miniredis
		var cs, others []*redcoord.Client
		for i := range 3 {
			m, opts := redistest.Bubble()
			defer m.Close()
			ms = append(ms, m)
			for j := range 2 {
				rdb := redis.NewClient(opts)
				defer rdb.Close()
				if i == 2 && j == 0 {
					rdb.AddHook(sf)
				}
				c, err := redcoord.New(rdb)
				require.NoError(t, err)
				defer c.Close(ctx)
				if j == 0 {
					cs = append(cs, c)
				} else {
					others = append(others, c)
				}
			}
		}
		rl := rlock.NewRedLock(cs, "job")
		require.NoError(t, rl.Lock(ctx))
		hctx, cancel := rl.Context(ctx)
		defer cancel()
		lost := rl.Lost()
		sf.FailBefore("lock_release")
		err := rl.Unlock(ctx)
		require.ErrorIs(t, err, locktest.ErrInjected)
		assert.Contains(t, err.Error(), "clients[2]")
		require.Error(t, hctx.Err(), "the hold's Context ends with the Unlock")
		assert.ErrorIs(t, context.Cause(hctx), redcoord.ErrNotHeld, "ended as the Unlock was sent")
		assert.True(t, locktest.IsClosed(lost), "Lost closes with the Unlock")
		assert.Zero(t, rl.Token())
		assert.Zero(t, rl.Validity())
		assert.True(t, ms[2].Exists("rc:{job}:lock"), "still held on server 2")
		assert.False(t, ms[0].Exists("rc:{job}:lock"), "released on server 0")

		other := rlock.NewRedLock(others, "job")
		ok, err := other.TryLock(ctx)
		require.NoError(t, err)
		require.True(t, ok, "another process takes it on servers 0 and 1")
		require.ErrorIs(t, rl.Unlock(ctx), redcoord.ErrLeaseLost, "Unlock again releases the grant left")
		assert.False(t, ms[2].Exists("rc:{job}:lock"))
		require.NoError(t, other.Unlock(ctx))
		require.NoError(t, rl.Lock(ctx))
		require.NoError(t, rl.Unlock(ctx))
		assert.ErrorIs(t, rl.Unlock(ctx), redcoord.ErrNotHeld)
	})
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
