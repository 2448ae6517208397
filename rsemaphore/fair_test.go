package rsemaphore_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rsemaphore"
)

// With WithFair, a request for 3 permits at the head of the queue is not
// overtaken by later requests for 1, though 1 permit is free all along:
// not by fair waiters, not by TryAcquire; an unfair Acquire is refused
// (see TestMixedFairAndUnfairWaitersRefused). When enough are released,
// the 3 goes first, then the 1s in the order they asked.
func TestFairLargeRequestNotOvertaken(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard
		defer cancel()
		rdb := srv.Client(t)
		procs := []*redcoord.Client{locktest.NewClient(t, rdb), locktest.NewClient(t, rdb), locktest.NewClient(t, rdb)}
		holder := rsemaphore.New(procs[0], "n")
		require.NoError(t, holder.SetPermits(ctx, 5))
		require.NoError(t, holder.Acquire(ctx, 4)) // 1 free

		big := rsemaphore.New(procs[1], "n", rsemaphore.WithFair())
		bigDone := semAsync(ctx, big, 3)
		semWaiting(t, procs[1], 1, holder, true, 1)
		small1 := rsemaphore.New(procs[2], "n", rsemaphore.WithFair())
		small1Done := semAsync(ctx, small1, 1)
		semWaiting(t, procs[2], 1, holder, true, 2)
		small2 := rsemaphore.New(procs[1], "n", rsemaphore.WithFair())
		small2Done := semAsync(ctx, small2, 1)
		semWaiting(t, procs[1], 2, holder, true, 3)
		err := rsemaphore.New(procs[2], "n").Acquire(ctx, 1)
		require.ErrorIs(t, err, redcoord.ErrInvalidArgument, "an unfair Acquire does not wait beside fair ones")

		assert.False(t, semTry(t, rsemaphore.New(procs[0], "n"), 1), "TryAcquire ahead of the queue")
		assert.False(t, semTry(t, rsemaphore.New(procs[0], "n", rsemaphore.WithFair()), 1), "a fair TryAcquire does not queue")
		assert.Equal(t, rsemaphore.State{Set: true, Available: 1, Total: 5, Waiting: 3}, semState(t, holder),
			"the free permit is kept for the head")
		for _, ch := range []<-chan error{bigDone, small1Done, small2Done} {
			semPending(t, ch)
		}

		require.NoError(t, holder.Release(ctx, 2)) // 3 free: the head's
		require.NoError(t, semResult(t, bigDone))
		assert.Equal(t, rsemaphore.State{Set: true, Available: 0, Total: 5, Waiting: 2}, semState(t, holder))
		semPending(t, small1Done)
		semPending(t, small2Done)

		require.NoError(t, big.Release(ctx, 1))
		require.NoError(t, semResult(t, small1Done), "the first 1")
		assert.Equal(t, rsemaphore.State{Set: true, Available: 0, Total: 5, Waiting: 1}, semState(t, holder))
		semPending(t, small2Done)

		require.NoError(t, big.Release(ctx, 1))
		require.NoError(t, semResult(t, small2Done), "the second 1")
		assert.Equal(t, rsemaphore.State{Set: true, Available: 0, Total: 5}, semState(t, holder))

		require.NoError(t, big.Release(ctx, 1))
		for _, s := range []*rsemaphore.Semaphore{holder, small1, small2} {
			require.NoError(t, s.Release(ctx, 1))
		}
		require.NoError(t, holder.Release(ctx, 1))
		assert.Equal(t, rsemaphore.State{Set: true, Available: 5, Total: 5}, semState(t, holder))
		assert.ElementsMatch(t, []string{"rc:{n}:permits", "rc:{n}:done"}, locktest.Keys(t, rdb), "no queue left")
	})
}

// Fair waiters of mixed sizes, queued from two processes, are served in
// the order they asked as permits come back one at a time: a head that
// does not fit holds back every waiter behind it, and one release serves
// every head that fits. Each step is checked at a quiescent instant of a
// synctest bubble.
func TestFairServesInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m, opts := redistest.Bubble()
		defer m.Close()
		var procs []*redcoord.Client
		for i := 0; i < 2; i++ {
			rdb := redis.NewClient(opts)
			defer rdb.Close()
			c, err := redcoord.New(rdb)
			require.NoError(t, err)
			defer c.Close(ctx)
			procs = append(procs, c)
		}
		holder := rsemaphore.New(procs[0], "n")
		require.NoError(t, holder.SetPermits(ctx, 5))
		require.NoError(t, holder.Acquire(ctx, 5))

		sizes := []int64{3, 1, 1, 2, 1, 4}
		ws := make([]*semWaiter, len(sizes))
		for i, n := range sizes {
			w := &semWaiter{done: make(chan error, 1)}
			s := rsemaphore.New(procs[i%2], "n", rsemaphore.WithFair())
			go func() { w.done <- s.Acquire(ctx, n) }()
			synctest.Wait()
			ws[i] = w
		}
		require.Equal(t, int64(len(sizes)), semState(t, holder).Waiting)
		seen := map[int]bool{}
		release := func(s *rsemaphore.Semaphore, n int64, want []int, avail int64) {
			t.Helper()
			require.NoError(t, s.Release(ctx, n))
			synctest.Wait()
			assert.Equal(t, want, semReturned(t, ws, seen))
			st := semState(t, holder)
			assert.Equal(t, avail, st.Available)
			assert.Equal(t, int64(len(sizes)-len(want)), st.Waiting)
		}
		release(holder, 1, nil, 1)
		release(holder, 1, nil, 2)
		release(holder, 1, []int{0}, 0)           // the 3 at the head
		release(holder, 1, []int{0, 1}, 0)        // the first 1
		release(holder, 1, []int{0, 1, 2}, 0)     // the second 1
		back := rsemaphore.New(procs[1], "n")     // any handle may release
		release(back, 3, []int{0, 1, 2, 3, 4}, 0) // the 2 and the third 1 at once
		release(back, 3, []int{0, 1, 2, 3, 4}, 3) // 3 of the 4 the last waiter needs
		release(back, 1, []int{0, 1, 2, 3, 4, 5}, 0)
		require.NoError(t, back.Release(ctx, 5))
		assert.Equal(t, rsemaphore.State{Set: true, Available: 5, Total: 5}, semState(t, holder))
		assert.ElementsMatch(t, []string{"rc:{n}:permits", "rc:{n}:done"}, m.Keys(), "no queue left")
	})
}

// A fair waiter that checks less often than Redis remembers requests
// (scripts.RequestTTL, 15s: here it polls every 20s, as WithPolling allows)
// must still find the permits granted to it while it slept: it gets them
// once, and when every holder has released, all the permits are back.
func TestGrantOutlivesARarePoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m, opts := redistest.Bubble()
		defer m.Close()
		hrdb, wrdb := redis.NewClient(opts), redis.NewClient(opts)
		defer hrdb.Close()
		defer wrdb.Close()
		hc, err := redcoord.New(hrdb)
		require.NoError(t, err)
		defer hc.Close(ctx)
		wc, err := redcoord.New(wrdb, redcoord.WithPolling(20*time.Second))
		require.NoError(t, err)
		defer wc.Close(ctx)

		holder := rsemaphore.New(hc, "n")
		require.NoError(t, holder.SetPermits(ctx, 6))
		require.NoError(t, holder.Acquire(ctx, 4)) // 2 free
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		waiter := rsemaphore.New(wc, "n", rsemaphore.WithFair())
		done := make(chan error, 1)
		go func() { done <- waiter.Acquire(wctx, 3) }()
		synctest.Wait()
		require.Equal(t, int64(1), semState(t, holder).Waiting)

		require.NoError(t, holder.Release(ctx, 1)) // 3 free: granted to the waiter
		assert.Equal(t, rsemaphore.State{Set: true, Available: 0, Total: 6}, semState(t, holder))
		time.Sleep(25 * time.Second) // past the waiter's poll, 20s after it asked
		select {
		case err := <-done:
			require.NoError(t, err)
			require.NoError(t, waiter.Release(ctx, 3))
		default:
			t.Error("the waiter did not find its grant at its poll: it waits on")
			cancel()
			assert.ErrorIs(t, <-done, context.Canceled)
		}
		require.NoError(t, holder.Release(ctx, 3))
		assert.Equal(t, rsemaphore.State{Set: true, Available: 6, Total: 6}, semState(t, holder),
			"every permit released: none may be lost")
	})
}
