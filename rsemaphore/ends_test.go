package rsemaphore_test

import (
	"context"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rsemaphore"
)

// Close ends the permits the watchdog kept before it returns: nothing
// renews them any more, so each one's Lost closes and its contexts end
// with ErrClosed.
func TestExpirableClosedEnds(t *testing.T) {
	locktest.InBubble(t, 1, func(t *testing.T, _ *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		s := rsemaphore.NewExpirable(ps[0].C, "pool")
		require.NoError(t, s.SetPermits(ctx, 2))
		p, err := s.Acquire(ctx, rsemaphore.AcquireOptions{})
		require.NoError(t, err)
		scoped, cancel := s.Context(ctx, p)
		defer cancel()
		require.NoError(t, ps[0].C.Close(ctx))
		assert.True(t, locktest.IsClosed(p.Lost()), "Lost closed by Close")
		require.Error(t, scoped.Err(), "the permit's context ended by Close")
		assert.ErrorIs(t, context.Cause(scoped), redcoord.ErrClosed)
	})
}

// Release on a done context is sent all the same: the permits are back at
// once, a Semaphore's and an ExpirableSemaphore's.
func TestDoneRelease(t *testing.T) {
	locktest.InBubble(t, 1, func(t *testing.T, _ *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		done, cancel := context.WithCancel(ctx)
		cancel()
		s := rsemaphore.New(ps[0].C, "sem")
		require.NoError(t, s.SetPermits(ctx, 1))
		require.NoError(t, s.Acquire(ctx, 1))
		require.NoError(t, s.Release(done, 1))
		n, err := s.Available(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(1), n)

		x := rsemaphore.NewExpirable(ps[0].C, "pool")
		require.NoError(t, x.SetPermits(ctx, 1))
		p, err := x.Acquire(ctx, rsemaphore.AcquireOptions{})
		require.NoError(t, err)
		require.NoError(t, x.Release(done, p))
		n, err = x.Available(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(1), n)
		assert.False(t, locktest.IsClosed(p.Lost()), "released, not lost")
	})
}
