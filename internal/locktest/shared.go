package locktest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
)

// Setup runs f in a synctest bubble with a fresh handle and a count of the
// requests its process has sent so far.
type Setup func(t *testing.T, f func(t *testing.T, h redcoord.Locker, sent func() int64))

// OneServer is the Setup of a kind whose handles live on one server: mk
// makes the handle on "shared" for one Client on a miniredis of the
// bubble's.
func OneServer(mk func(c *redcoord.Client, name string) redcoord.Locker) Setup {
	return func(t *testing.T, f func(t *testing.T, h redcoord.Locker, sent func() int64)) {
		InBubble(t, 1, func(t *testing.T, _ *miniredis.Miniredis, ps []*Proc) {
			f(t, mk(ps[0].C, "shared"), ps[0].RT.Load)
		})
	}
}

// holdCounter is a handle that says how many times it holds, as Redis sees
// it (the single locks).
type holdCounter interface {
	HoldCount(ctx context.Context) (int64, error)
}

// Shared checks the rule for goroutines that share one handle (see
// "Sharing a handle" at redcoord.Locker): they exclude each other as with
// a sync.Mutex; a Lock whose ctx descends from the hold's Context re-enters
// it; a TryLock on a handle another call holds is (false, nil) without a
// request; a Lock waiting for the handle's hold ends with its ctx, without
// a request; another goroutine's Unlock releases; a ctx of a hold that has
// ended is done and acquires nothing.
func Shared(t *testing.T, setup Setup) {
	t.Run("exclusive", func(t *testing.T) {
		setup(t, func(t *testing.T, h redcoord.Locker, _ func() int64) {
			const goroutines, rounds = 8, 3
			var inside, most, done atomic.Int64
			var wg sync.WaitGroup
			for range goroutines {
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
					defer cancel()
					for range rounds {
						if !assert.NoError(t, h.Lock(ctx)) {
							return
						}
						n := inside.Add(1)
						for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
						}
						time.Sleep(10 * time.Millisecond)
						inside.Add(-1)
						assert.NoError(t, h.Unlock(ctx))
						done.Add(1)
					}
				})
			}
			wg.Wait()
			assert.Equal(t, int64(1), most.Load(), "goroutines sharing a handle were inside at once")
			assert.Equal(t, int64(goroutines*rounds), done.Load())
		})
	})

	t.Run("re-entry", func(t *testing.T) {
		setup(t, func(t *testing.T, h redcoord.Locker, _ func() int64) {
			ctx := context.Background()
			require.NoError(t, h.Lock(ctx))
			hctx, cancel := h.Context(ctx)
			defer cancel()
			require.NoError(t, h.Lock(hctx), "a ctx from the hold's Context re-enters")
			if hc, ok := h.(holdCounter); ok {
				n, err := hc.HoldCount(ctx)
				require.NoError(t, err)
				assert.Equal(t, int64(2), n)
			}
			inner, cancelInner := context.WithCancel(hctx)
			defer cancelInner()
			ok, err := h.TryLock(inner)
			require.NoError(t, err)
			assert.True(t, ok, "a ctx derived from the hold's Context re-enters too")
			require.NoError(t, h.Unlock(ctx))
			require.NoError(t, h.Unlock(ctx))
			require.NoError(t, hctx.Err(), "a re-entry's Unlock keeps the hold")
			require.NoError(t, h.Unlock(ctx))
			require.Error(t, hctx.Err())
			assert.ErrorIs(t, h.Unlock(ctx), redcoord.ErrNotHeld, "three Locks, three Unlocks")

			err = h.Lock(hctx)
			assert.ErrorIs(t, err, redcoord.ErrNotAcquired, "the ctx of a hold that has ended")
			assert.ErrorIs(t, err, context.Canceled)
			ok, err = h.TryLock(hctx)
			assert.False(t, ok)
			assert.ErrorIs(t, err, context.Canceled)
		})
	})

	t.Run("try", func(t *testing.T) {
		setup(t, func(t *testing.T, h redcoord.Locker, sent func() int64) {
			ctx := context.Background()
			require.NoError(t, h.Lock(ctx))
			synctest.Wait()
			before := sent()
			var ok bool
			var err error
			go func() { ok, err = h.TryLock(ctx) }()
			synctest.Wait()
			require.NoError(t, err)
			assert.False(t, ok, "another goroutine's TryLock on a held shared handle")
			assert.Equal(t, before, sent(), "and it sent no request")
			require.NoError(t, h.Unlock(ctx))
		})
	})

	t.Run("wait ends", func(t *testing.T) {
		setup(t, func(t *testing.T, h redcoord.Locker, sent func() int64) {
			ctx := context.Background()
			require.NoError(t, h.Lock(ctx))
			synctest.Wait()
			before := sent()
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			var err error
			go func() { err = h.Lock(wctx) }()
			synctest.Wait()
			assert.Equal(t, before, sent(), "the waiter sends no request")
			time.Sleep(6 * time.Second)
			synctest.Wait()
			assert.ErrorIs(t, err, redcoord.ErrNotAcquired)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Equal(t, before, sent(), "nor when its wait ends")
			require.NoError(t, h.Unlock(ctx))
		})
	})

	t.Run("unlock elsewhere", func(t *testing.T) {
		setup(t, func(t *testing.T, h redcoord.Locker, _ func() int64) {
			ctx := context.Background()
			require.NoError(t, h.Lock(ctx))
			waited := make(chan error, 1)
			go func() { waited <- h.Lock(ctx) }()
			synctest.Wait()
			select {
			case err := <-waited:
				t.Fatalf("a second goroutine's Lock returned %v while the handle was held", err)
			default:
			}
			unlocked := make(chan error, 1)
			go func() { unlocked <- h.Unlock(ctx) }()
			require.NoError(t, <-unlocked, "an Unlock by a goroutine that did not lock")
			require.NoError(t, <-waited, "the waiter takes the hold then")
			require.NoError(t, h.Unlock(ctx))
		})
	})
}
