package rratelimit_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rratelimit"
)

// Waits are served in the order they reach Redis, whatever their process
// and however many events each asks for: 20 waits started 1ms apart in 4
// processes return in the order they started, each at its slot.
func TestWaitFirstComeFirstServed(t *testing.T) {
	locktest.InBubble(t, 4, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		limit := rratelimit.PerSecond(10).WithBurst(3)
		var mu sync.Mutex
		var order []int
		var wg sync.WaitGroup
		start := time.Now()
		for i := range 20 {
			lim := rratelimit.New(ps[i%4].C, "fifo", limit)
			n := 1 + i%3
			time.Sleep(time.Millisecond)
			wg.Go(func() {
				require.NoError(t, lim.WaitN(ctx, n))
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
			})
			synctest.Wait() // its reservation is made
		}
		wg.Wait()
		for i, got := range order {
			assert.Equal(t, i, got, "return %d", i)
		}
		// 39 events at 10/s with a burst of 3, from 1ms on: the last
		// wait's slot is when TAT, 3.9s past 1ms, is 300ms ahead.
		assert.Equal(t, 3601*time.Millisecond, time.Since(start))
	})
}

// A wait whose deadline comes before its slot reserves nothing and
// returns at once, naming the wait it would have needed; the next caller
// gets the slot it would have had.
func TestWaitDeadlineBeforeSlotReservesNothing(t *testing.T) {
	locktest.InBubble(t, 1, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		lim := rratelimit.New(ps[0].C, "dl", rratelimit.PerSecond(1))
		require.NoError(t, lim.Wait(ctx))
		before := mr.Dump()

		dctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := lim.Wait(dctx)
		assert.ErrorIs(t, err, redcoord.ErrNotAcquired)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorContains(t, err, `rratelimit "dl": 1 events need a wait of 1s, past the context's deadline (in 500ms), so nothing was reserved`)
		assert.Zero(t, time.Since(start), "returned at once")
		assert.Equal(t, before, mr.Dump(), "nothing reserved")

		time.Sleep(time.Second)
		r, err := lim.Allow(ctx)
		require.NoError(t, err)
		assert.True(t, r.Allowed, "the slot is the next caller's")

		// A deadline at or after the slot waits for it.
		dctx2, cancel2 := context.WithTimeout(ctx, time.Second)
		defer cancel2()
		start = time.Now()
		require.NoError(t, lim.Wait(dctx2))
		assert.Equal(t, time.Second, time.Since(start))
	})
}

// A wait cancelled while it sleeps gives its slot back when it is the
// last one reserved: the next wait gets that slot. One cancelled with a
// later wait reserved behind it leaves its slot unused: the next one
// comes after the later wait, never at its time.
func TestCancelledWaitGivesItsSlotBack(t *testing.T) {
	locktest.InBubble(t, 2, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		a := rratelimit.New(ps[0].C, "cb", rratelimit.PerSecond(1))
		b := rratelimit.New(ps[1].C, "cb", rratelimit.PerSecond(1))
		require.NoError(t, a.Wait(ctx)) // at 0s; the next slot is at 1s

		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- b.Wait(cctx) }()
		time.Sleep(100 * time.Millisecond)
		cancel()
		err := <-done
		assert.ErrorIs(t, err, redcoord.ErrNotAcquired)
		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorContains(t, err, "after waiting 100ms of 1s for its slot: the slot was given back")

		start := time.Now()
		require.NoError(t, a.Wait(ctx))
		assert.Equal(t, 900*time.Millisecond, time.Since(start), "the slot at 1s was given back")

		// Now two waits, with slots at 2s and 3s; the first is cancelled
		// at 1.5s. The second keeps its slot, and the next wait comes
		// after it, at 4s.
		cctx, cancel = context.WithCancel(ctx)
		go func() { done <- b.Wait(cctx) }() // slot at 2s
		synctest.Wait()
		later := make(chan error, 1)
		go func() { later <- a.Wait(ctx) }() // slot at 3s
		synctest.Wait()
		time.Sleep(500 * time.Millisecond)
		cancel()
		err = <-done
		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorContains(t, err, "the slot was left unused (a later wait was reserved after it)")
		start = time.Now() // 1.5s
		require.NoError(t, <-later)
		assert.Equal(t, 1500*time.Millisecond, time.Since(start), "the later wait keeps its slot at 3s")
		require.NoError(t, b.Wait(ctx))
		assert.Equal(t, 2500*time.Millisecond, time.Since(start), "the next wait comes after it, at 4s")
	})
}

// A wait whose Client is closed while it sleeps ends with ErrClosed and
// gives its slot back.
func TestWaitEndsWithClose(t *testing.T) {
	locktest.InBubble(t, 2, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		a := rratelimit.New(ps[0].C, "cl", rratelimit.PerSecond(1))
		require.NoError(t, a.Wait(ctx))
		done := make(chan error, 1)
		go func() { done <- rratelimit.New(ps[1].C, "cl", rratelimit.PerSecond(1)).Wait(ctx) }()
		synctest.Wait()
		require.NoError(t, ps[1].C.Close(ctx))
		err := <-done
		assert.ErrorIs(t, err, redcoord.ErrNotAcquired)
		assert.ErrorIs(t, err, redcoord.ErrClosed)
		assert.ErrorContains(t, err, "given back")
		r, err := a.Allow(ctx)
		require.NoError(t, err)
		assert.Equal(t, time.Second, r.RetryAfter, "the slot at 1s is free again")
	})
}
