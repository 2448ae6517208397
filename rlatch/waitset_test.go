package rlatch_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rlatch"
)

// A Wait with WithWaitForSet that starts before the latch is set is woken
// by TrySetCount (it looks again at that instant, without polling), and
// returns when the round set reaches zero; without the option, the same
// Wait is ErrNotSet at once.
func TestWaitForSet(t *testing.T) {
	locktest.InBubble(t, 2, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		start := time.Now()
		require.ErrorIs(t, rlatch.New(ps[1].C, "job").Wait(ctx), redcoord.ErrNotSet, "the default")

		w := rlatch.New(ps[1].C, "job", rlatch.WithWaitForSet(), rlatch.WithMaxPollInterval(time.Hour))
		done := make(chan error, 1)
		go func() { done <- w.Wait(ctx) }()
		synctest.Wait()
		require.Empty(t, done, "returned before the latch was set")

		before := ps[1].RT.Load()
		setter := rlatch.New(ps[0].C, "job")
		ok, err := setter.TrySetCount(ctx, 1)
		require.NoError(t, err)
		require.True(t, ok)
		synctest.Wait()
		assert.Greater(t, ps[1].RT.Load(), before, "the set woke the waiter, which looked again")
		require.Empty(t, done, "returned before the count reached zero")

		require.NoError(t, setter.CountDown(ctx))
		require.NoError(t, <-done)
		assert.Zero(t, time.Since(start), "a waiter polled: the bubble's clock moved")
	})
}

// A Wait with WithWaitForSet on a latch that is never set ends with its
// context, with an error matching ctx.Err().
func TestWaitForSetContextEnds(t *testing.T) {
	locktest.InBubble(t, 1, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		err := rlatch.New(ps[0].C, "job", rlatch.WithWaitForSet()).Wait(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 5*time.Second, time.Since(start))
	})
}
