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

// Close ends a MultiMutex's hold before it returns: nothing renews its
// names any more, so Lost closes and its contexts end with ErrClosed.
func TestMultiClosedEnds(t *testing.T) {
	locktest.InBubble(t, 1, func(t *testing.T, _ *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		mm := rlock.NewMulti(ps[0].C, []string{"a", "b"})
		require.NoError(t, mm.Lock(ctx))
		scoped, cancel := mm.Context(ctx)
		defer cancel()
		lost := mm.Lost()
		require.NoError(t, ps[0].C.Close(ctx))
		synctest.Wait() // the hold's watcher runs
		assert.True(t, locktest.IsClosed(lost), "Lost closed by Close")
		require.Error(t, scoped.Err(), "the hold's context ended by Close")
		assert.ErrorIs(t, context.Cause(scoped), redcoord.ErrClosed)
	})
}

// A RedLock whose Clients close below a majority ends its hold, with
// ErrClosed.
func TestRedLockClosedEnds(t *testing.T) {
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
		scoped, cancel := rl.Context(ctx)
		defer cancel()
		require.NoError(t, cs[0].Close(ctx))
		synctest.Wait()
		assert.False(t, locktest.IsClosed(rl.Lost()), "a majority still holds")
		require.NoError(t, cs[1].Close(ctx))
		synctest.Wait()
		assert.True(t, locktest.IsClosed(rl.Lost()))
		assert.ErrorIs(t, context.Cause(scoped), redcoord.ErrClosed)
	})
}

// A MultiMutex's and a RedLock's Unlock on a done context are sent all the
// same: the names are free at once.
func TestCompoundDoneRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		done, cancel := context.WithCancel(ctx)
		cancel()
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
		mm := rlock.NewMulti(cs[0], []string{"a", "b"})
		require.NoError(t, mm.Lock(ctx))
		require.NoError(t, mm.Unlock(done))
		for _, name := range []string{"a", "b"} {
			held, err := rlock.New(cs[0], name).IsLocked(ctx)
			require.NoError(t, err)
			assert.False(t, held, name)
		}

		rl := rlock.NewRedLock(cs, "job")
		require.NoError(t, rl.Lock(ctx))
		require.NoError(t, rl.Unlock(done))
		for i, c := range cs {
			held, err := rlock.New(c, "job").IsLocked(ctx)
			require.NoError(t, err)
			assert.False(t, held, "server %d", i)
		}
	})
}

// A MultiMutex whose fixed lease outlives its Client's Close still holds
// its names in Redis until that lease ends, and its Lost closes then, with
// ErrLeaseLost, before another owner can take them.
func TestMultiFixedLeaseOutlivesClose(t *testing.T) {
	locktest.InBubble(t, 2, func(t *testing.T, _ *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		names := []string{"a", "b"}
		mm := rlock.NewMulti(ps[0].C, names)
		require.NoError(t, mm.LockWithLease(ctx, time.Second))
		scoped, cancel := mm.Context(ctx)
		defer cancel()
		lost := mm.Lost()
		time.Sleep(500 * time.Millisecond)
		require.NoError(t, ps[0].C.Close(ctx))
		synctest.Wait()
		assert.False(t, locktest.IsClosed(lost), "the names are still held in Redis")
		other := rlock.NewMulti(ps[1].C, names)
		ok, err := other.TryLock(ctx)
		require.NoError(t, err)
		require.False(t, ok, "the fixed lease still holds the names")

		time.Sleep(500 * time.Millisecond) // the lease's end, as the Client measures it
		synctest.Wait()
		assert.True(t, locktest.IsClosed(lost), "Lost closed at the lease's end")
		require.Error(t, scoped.Err(), "the hold's context ended with its lease")
		assert.ErrorIs(t, context.Cause(scoped), redcoord.ErrLeaseLost)
		ok, err = other.TryLock(ctx)
		require.NoError(t, err)
		assert.True(t, ok, "the names are free after the lease")
	})
}
