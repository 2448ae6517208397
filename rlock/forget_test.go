package rlock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rfairlock"
	"github.com/redcoord/redcoord/rlock"
	"github.com/redcoord/redcoord/rrwlock"
)

// Forget deletes a free name's fence and the handle's markers, and nothing
// while the name is held or waited for; tokens after it still increase
// (the server's clock floors them).
func TestForget(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		c := locktest.NewClient(t, rdb)

		m := rlock.New(c, "r")
		require.NoError(t, m.Lock(ctx))
		first := m.Token()
		ok, err := m.Forget(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "held")
		require.NoError(t, m.Unlock(ctx))
		ok, err = m.Forget(ctx)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Zero(t, rdb.Exists(ctx, "rc:{r}:fence").Val(), "the fence is gone")
		require.NoError(t, m.Lock(ctx))
		assert.Greater(t, m.Token(), first, "tokens still increase")
		require.NoError(t, m.Unlock(ctx))

		fair := rfairlock.New(c, "q")
		require.NoError(t, fair.Lock(ctx))
		require.NoError(t, fair.Unlock(ctx))
		ok, err = fair.Forget(ctx)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Zero(t, rdb.Exists(ctx, "rc:{q}:fence").Val())

		holder, waiter := rfairlock.New(c, "q2"), rfairlock.New(locktest.NewClient(t, rdb), "q2")
		require.NoError(t, holder.Lock(ctx))
		done := make(chan error, 1)
		go func() { done <- waiter.Lock(ctx) }()
		locktest.Eventually(t, func() bool { n, _ := holder.QueueLength(ctx); return n == 1 }, "queued")
		require.NoError(t, holder.Unlock(ctx))
		require.NoError(t, <-done)
		require.NoError(t, waiter.Unlock(ctx))
		ok, err = holder.Forget(ctx)
		require.NoError(t, err)
		assert.True(t, ok, "free, nobody queued")

		rw := rrwlock.New(c, "w")
		require.NoError(t, rw.RLock(ctx))
		ok, err = rrwlock.New(c, "w").Forget(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "read held")
		ok, err = rlock.New(c, "w").Forget(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "read held, whatever kind asks")
		require.NoError(t, rw.RUnlock(ctx))
		ok, err = rw.Forget(ctx)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Zero(t, rdb.Exists(ctx, "rc:{w}:fence").Val())
	})
}

// Forget keeps a fence whose last token is ahead of the server's clock (a
// failover from a primary whose clock ran an hour ahead): deleting it
// would have the next token start again from the clock, below the last.
func TestForgetFenceAheadOfClock(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		c := locktest.NewClient(t, rdb)

		m := rlock.New(c, "ahead")
		now, err := rdb.Time(ctx).Result()
		require.NoError(t, err)
		ahead := uint64(now.Add(time.Hour).UnixMicro())
		require.NoError(t, rdb.HSet(ctx, "rc:{ahead}:fence", "n", strconv.FormatUint(ahead, 10)).Err())
		require.NoError(t, m.Lock(ctx))
		last := m.Token()
		require.Equal(t, ahead+1, last, "the counter is ahead of the clock")
		require.NoError(t, m.Unlock(ctx))

		ok, err := m.Forget(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "a fence ahead of the clock is kept")
		assert.Equal(t, int64(1), rdb.Exists(ctx, "rc:{ahead}:fence").Val())
		require.NoError(t, m.Lock(ctx))
		assert.Greater(t, m.Token(), last, "tokens still increase")
		require.NoError(t, m.Unlock(ctx))
	})
}
