package rlatch_test

import (
	"context"
	"errors"
	"sync"
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
	"github.com/redcoord/redcoord/internal/scripts"
	"github.com/redcoord/redcoord/rlatch"
	"github.com/redcoord/redcoord/rlock"
)

// 64 waiters in 8 processes, each polling at most once an hour, are all
// released by the CountDown that opens the latch, at the instant it does
// (the bubble's clock does not move), with no round trip after it: its
// message says which round opened; the CountDowns before it wake nobody.
func TestLastCountDownReleasesEveryWaiter(t *testing.T) {
	locktest.InBubble(t, 9, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		setter := rlatch.New(ps[0].C, "job")
		ok, err := setter.TrySetCount(ctx, 3)
		require.NoError(t, err)
		require.True(t, ok)

		const waiters = 64
		done := make(chan error, waiters)
		for i := range waiters {
			l := rlatch.New(ps[1+i%8].C, "job", rlatch.WithMaxPollInterval(time.Hour))
			go func() { done <- l.Wait(ctx) }()
		}
		synctest.Wait()
		require.Empty(t, done, "waiters returned before the latch opened")
		before := 0
		for _, p := range ps[1:] {
			before += int(p.RT.Load())
		}

		require.NoError(t, setter.CountDown(ctx))
		require.NoError(t, setter.CountDown(ctx))
		synctest.Wait()
		require.Empty(t, done, "waiters returned at a count of 1")
		opened := time.Now()
		require.NoError(t, setter.CountDown(ctx))
		for range waiters {
			require.NoError(t, <-done)
		}
		assert.Zero(t, time.Since(opened), "a waiter polled: the bubble's clock moved")
		after := 0
		for _, p := range ps[1:] {
			after += int(p.RT.Load())
		}
		assert.Zero(t, after-before, "no waiter looked at Redis after the first CountDown: the message was enough")
		n, err := setter.Count(ctx)
		require.NoError(t, err)
		assert.Zero(t, n)
	})
}

// Wait returns at once for a latch at zero, in one round trip, and gives
// ErrNotSet at once for one never set; a waiter of a deleted latch gets
// ErrNotSet too.
func TestWaitAtOnce(t *testing.T) {
	locktest.InBubble(t, 2, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		l := rlatch.New(ps[0].C, "l")
		err := l.Wait(ctx)
		assert.ErrorIs(t, err, redcoord.ErrNotSet)
		assert.Contains(t, err.Error(), `redcoord: not set: rlatch "l": its count was never set: call TrySetCount first`)
		_, err = l.Count(ctx)
		assert.ErrorIs(t, err, redcoord.ErrNotSet)
		assert.ErrorIs(t, l.CountDown(ctx), redcoord.ErrNotSet)

		_, err = l.TrySetCount(ctx, 1)
		require.NoError(t, err)
		require.NoError(t, l.CountDown(ctx))
		before := ps[1].RT.Load()
		require.NoError(t, rlatch.New(ps[1].C, "l").Wait(ctx))
		assert.Equal(t, int64(1), ps[1].RT.Load()-before, "one round trip")

		ok, err := l.TrySetCount(ctx, 2)
		require.NoError(t, err)
		assert.True(t, ok, "a spent latch starts again")
		ok, err = l.TrySetCount(ctx, 5)
		require.NoError(t, err)
		assert.False(t, ok, "a counting latch keeps its count")
		done := make(chan error, 1)
		go func() { done <- rlatch.New(ps[1].C, "l").Wait(ctx) }()
		synctest.Wait()
		existed, err := l.Delete(ctx)
		require.NoError(t, err)
		assert.True(t, existed)
		assert.ErrorIs(t, <-done, redcoord.ErrNotSet, "the waiter of a deleted latch")
	})
}

// A latch that reached zero stays its spent TTL, from the handle that set
// its count: waiters return at once until then, and get ErrNotSet after.
func TestSpentLatchExpires(t *testing.T) {
	locktest.InBubble(t, 1, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		l := rlatch.New(ps[0].C, "l", rlatch.WithSpentTTL(time.Minute))
		_, err := l.TrySetCount(ctx, 1)
		require.NoError(t, err)
		time.Sleep(time.Hour)
		n, err := l.Count(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(1), n, "a counting latch has no TTL")
		require.NoError(t, rlatch.New(ps[0].C, "l").CountDown(ctx), "by a handle with the default spent TTL: the setter's applies")
		time.Sleep(time.Minute - time.Millisecond)
		require.NoError(t, l.Wait(ctx))
		time.Sleep(time.Millisecond)
		assert.ErrorIs(t, l.Wait(ctx), redcoord.ErrNotSet)
		assert.Empty(t, mr.Keys(), "nothing is left of a spent latch")
	})
}

// Waits that end with their context, or with their Client, return at once
// with an error that says why, and leave nothing behind: no key but the
// latch's, and no subscription once the Hub's linger has passed.
func TestEndedWaitsLeaveNothing(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx := context.Background()
		rdb := srv.Client(t)
		c := locktest.NewClient(t, srv.Client(t), redcoord.WithMaxPollInterval(100*time.Millisecond))
		l := rlatch.New(c, "l")
		_, err := l.TrySetCount(ctx, 1)
		require.NoError(t, err)
		before, err := rdb.Keys(ctx, "*").Result()
		require.NoError(t, err)

		var wg sync.WaitGroup
		errs := make(chan error, 8)
		cctx, cancel := context.WithCancel(ctx)
		for range 4 {
			wg.Go(func() { errs <- rlatch.New(c, "l").Wait(cctx) })
		}
		tctx, tcancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer tcancel()
		for range 4 {
			wg.Go(func() { errs <- rlatch.New(c, "l").Wait(tctx) })
		}
		time.Sleep(100 * time.Millisecond) // every wait is on the Hub (or polls)
		cancel()
		wg.Wait()
		close(errs)
		var canceled, timedOut int
		for err := range errs {
			switch {
			case errors.Is(err, context.Canceled):
				canceled++
			case errors.Is(err, context.DeadlineExceeded):
				timedOut++
			default:
				t.Errorf("unexpected error: %v", err)
			}
		}
		assert.Equal(t, 4, canceled)
		assert.Equal(t, 4, timedOut)
		after, err := rdb.Keys(ctx, "*").Result()
		require.NoError(t, err)
		assert.ElementsMatch(t, before, after, "keys changed")
		locktest.Eventually(t, func() bool { return len(rdb.PubSubChannels(ctx, "rc:{*").Val()) == 0 }, "PUBSUB CHANNELS empty")

		closing := locktest.NewClient(t, srv.Client(t))
		done := make(chan error, 1)
		go func() { done <- rlatch.New(closing, "l").Wait(ctx) }()
		time.Sleep(20 * time.Millisecond)
		require.NoError(t, closing.Close(ctx))
		assert.ErrorIs(t, <-done, redcoord.ErrClosed)
	})
}

// Bad arguments, a closed Client and a done context are reported at once,
// naming what is wrong, and leave Redis unchanged.
func TestInputErrors(t *testing.T) {
	ctx := context.Background()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	c := locktest.NewClient(t, rdb)
	for _, tc := range []struct {
		l    *rlatch.Latch
		want string
	}{
		{rlatch.New(nil, "l"), "c: nil"},
		{rlatch.New(c, ""), "name"},
		{rlatch.New(c, "l", nil), "nil Option"},
		{rlatch.New(c, "l", rlatch.WithSpentTTL(time.Millisecond)), "WithSpentTTL"},
		{rlatch.New(c, "l", rlatch.WithMaxPollInterval(0)), "WithMaxPollInterval"},
	} {
		_, err := tc.l.TrySetCount(ctx, 1)
		assert.ErrorIs(t, err, redcoord.ErrInvalidArgument)
		assert.ErrorContains(t, err, tc.want)
		assert.ErrorIs(t, tc.l.CountDown(ctx), redcoord.ErrInvalidArgument)
		assert.ErrorIs(t, tc.l.Wait(ctx), redcoord.ErrInvalidArgument)
		_, err = tc.l.Count(ctx)
		assert.ErrorIs(t, err, redcoord.ErrInvalidArgument)
		_, err = tc.l.Delete(ctx)
		assert.ErrorIs(t, err, redcoord.ErrInvalidArgument)
	}
	l := rlatch.New(c, "l")
	for _, n := range []int64{0, -1, rlatch.MaxCount + 1} {
		_, err := l.TrySetCount(ctx, n)
		assert.ErrorIs(t, err, redcoord.ErrInvalidArgument, "n = %d", n)
		assert.ErrorContains(t, err, "n: must be from 1")
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	_, err := l.TrySetCount(done, 1)
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, l.Wait(done), context.Canceled)
	assert.Empty(t, mr.Keys(), "nothing written")

	closed := locktest.NewClient(t, rdb)
	require.NoError(t, closed.Close(ctx))
	_, err = rlatch.New(closed, "l").TrySetCount(ctx, 1)
	assert.ErrorIs(t, err, redcoord.ErrClosed)
	assert.ErrorIs(t, rlatch.New(closed, "l").Wait(ctx), redcoord.ErrClosed)
	assert.Empty(t, mr.Keys(), "nothing written")
}

// A latch's key of another type is refused; a lock of the same name is
// another object, whose keys and channel the latch never touches.
func TestWrongTypeAndSharedNames(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx := context.Background()
		rdb := srv.Client(t)
		c := locktest.NewClient(t, srv.Client(t))
		require.NoError(t, rdb.Set(ctx, "rc:{w}:latch", "x", 0).Err())
		_, err := rlatch.New(c, "w").TrySetCount(ctx, 1)
		assert.ErrorIs(t, err, redcoord.ErrWrongType)
		assert.ErrorIs(t, rlatch.New(c, "w").Wait(ctx), redcoord.ErrWrongType)
		assert.Equal(t, "x", rdb.Get(ctx, "rc:{w}:latch").Val())

		mu := rlock.New(c, "n")
		require.NoError(t, mu.Lock(ctx))
		l := rlatch.New(c, "n")
		_, err = l.TrySetCount(ctx, 1)
		require.NoError(t, err)
		require.NoError(t, l.CountDown(ctx))
		require.NoError(t, l.Wait(ctx))
		require.NoError(t, mu.Unlock(ctx))
	})
}

// Every CountDown counts once when go-redis sends it again after losing
// its reply, and a retried TrySetCount reports the set it made: 200
// CountDowns by 8 goroutines on a latch of 201, with replies dropped at
// random, leave 1.
func TestCountsExactUnderLostReplies(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx := context.Background()
		faults := redistest.NewFaults()
		rdb := srv.Client(t, func(o *redis.Options) {
			o.Dialer = faults.Dialer(nil)
			o.MinRetryBackoff, o.MaxRetryBackoff = time.Millisecond, 2*time.Millisecond
		})
		c := locktest.NewClient(t, rdb)
		l := rlatch.New(c, "l")
		// Load the scripts first: a dropped NOSCRIPT reply would only be
		// followed by SCRIPT LOAD and the same EVALSHA, which runs the script once.
		warm := rlatch.New(c, "warm")
		_, err := warm.TrySetCount(ctx, 1)
		require.NoError(t, err)
		require.NoError(t, warm.CountDown(ctx))

		faults.DropReply(locktest.EvalSHA("latch_set"))
		ok, err := l.TrySetCount(ctx, 201)
		require.NoError(t, err)
		assert.True(t, ok, "a retried TrySetCount reports the set it made")
		require.Equal(t, 1, faults.Fired())

		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 25 {
					if (g+i)%3 == 0 {
						faults.DropReply(locktest.EvalSHA("latch_down"))
					}
					assert.NoError(t, l.CountDown(ctx))
				}
			})
		}
		wg.Wait()
		assert.Greater(t, faults.Fired(), 20, "replies were dropped")
		n, err := l.Count(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(1), n, "each CountDown counted once")
	})
}

// A round that opened returns all its waiters, even when TrySetCount starts
// the next round before they have looked; a round that was deleted, and set
// again, gives its waiters ErrNotSet; the next round's waiters wait for it.
func TestRounds(t *testing.T) {
	locktest.InBubble(t, 3, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		coord := rlatch.New(ps[0].C, "l")
		start := func(n int) <-chan error {
			done := make(chan error, n)
			for i := range n {
				l := rlatch.New(ps[1+i%2].C, "l", rlatch.WithMaxPollInterval(time.Hour))
				go func() { done <- l.Wait(ctx) }()
			}
			synctest.Wait()
			require.Empty(t, done)
			return done
		}

		_, err := coord.TrySetCount(ctx, 1)
		require.NoError(t, err)
		round1 := start(20)
		// The coordinator opens the round and starts the next at once: a
		// waiter may look only after both.
		require.NoError(t, coord.CountDown(ctx))
		ok, err := coord.TrySetCount(ctx, 1)
		require.NoError(t, err)
		require.True(t, ok)
		for range 20 {
			require.NoError(t, <-round1, "a waiter of the round that opened")
		}

		round2 := start(10)
		existed, err := coord.Delete(ctx)
		require.NoError(t, err)
		require.True(t, existed)
		_, err = coord.TrySetCount(ctx, 1)
		require.NoError(t, err)
		for range 10 {
			assert.ErrorIs(t, <-round2, redcoord.ErrNotSet, "a waiter of the round that was deleted")
		}

		round3 := start(5)
		require.NoError(t, coord.CountDown(ctx))
		for range 5 {
			require.NoError(t, <-round3)
		}
	})
}

// A wait whose context is cancelled with a cause matches both the
// context's error and the cause.
func TestWaitCancelledWithCause(t *testing.T) {
	locktest.InBubble(t, 1, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		l := rlatch.New(ps[0].C, "l")
		_, err := l.TrySetCount(context.Background(), 1)
		require.NoError(t, err)
		ctx, cancel := context.WithCancelCause(context.Background())
		shutdown := errors.New("shutting down")
		done := make(chan error, 1)
		go func() { done <- l.Wait(ctx) }()
		synctest.Wait()
		cancel(shutdown)
		err = <-done
		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorIs(t, err, shutdown)
	})
}

// A Client that polls (WithPolling) waits by checking on its timer; the
// largest count counts down exactly.
func TestPollingWaitAndLargestCount(t *testing.T) {
	locktest.InBubble(t, 1, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		pc, err := redcoord.New(ps[0].RDB, redcoord.WithPolling(50*time.Millisecond))
		require.NoError(t, err)
		defer pc.Close(ctx)
		l := rlatch.New(ps[0].C, "l")
		_, err = l.TrySetCount(ctx, 1)
		require.NoError(t, err)
		done := make(chan time.Time, 1)
		go func() {
			assert.NoError(t, rlatch.New(pc, "l").Wait(ctx))
			done <- time.Now()
		}()
		time.Sleep(120 * time.Millisecond)
		opened := time.Now()
		require.NoError(t, l.CountDown(ctx))
		at := <-done
		assert.Greater(t, at.Sub(opened), time.Duration(0), "found on the timer, not woken")
		assert.LessOrEqual(t, at.Sub(opened), 50*time.Millisecond)

		big := rlatch.New(ps[0].C, "big")
		_, err = big.TrySetCount(ctx, rlatch.MaxCount)
		require.NoError(t, err)
		require.NoError(t, big.CountDown(ctx))
		n, err := big.Count(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(rlatch.MaxCount-1), n)
	})
}

// The largest count is the scripts' largest integer.
func TestMaxCount(t *testing.T) {
	assert.Equal(t, int64(scripts.MaxCount), int64(rlatch.MaxCount))
}
