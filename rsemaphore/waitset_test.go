package rsemaphore_test

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
	"github.com/redcoord/redcoord/rsemaphore"
)

// An Acquire with WithWaitForSet that starts before the permits are set
// returns, at the instant they are set (the set wakes it; it does not
// poll), with its permits; without the option it is ErrNotSet at once, and
// TryAcquire is ErrNotSet with the option too. So for a fair Semaphore and
// an ExpirableSemaphore, and whichever call sets the permits.
func TestAcquireWaitsForSet(t *testing.T) {
	type sem struct {
		acquire, set func(ctx context.Context) error
		try          func(ctx context.Context) error
	}
	kinds := map[string]func(w, s *locktest.Proc, opts ...rsemaphore.Option) sem{
		"TrySetPermits": func(w, s *locktest.Proc, opts ...rsemaphore.Option) sem {
			m := rsemaphore.New(w.C, "s", opts...)
			return sem{
				acquire: func(ctx context.Context) error { return m.Acquire(ctx, 2) },
				try:     func(ctx context.Context) error { _, err := m.TryAcquire(ctx, 1); return err },
				set: func(ctx context.Context) error {
					_, err := rsemaphore.New(s.C, "s").TrySetPermits(ctx, 2)
					return err
				},
			}
		},
		"fair AddPermits": func(w, s *locktest.Proc, opts ...rsemaphore.Option) sem {
			m := rsemaphore.New(w.C, "s", append(opts, rsemaphore.WithFair())...)
			return sem{
				acquire: func(ctx context.Context) error { return m.Acquire(ctx, 2) },
				try:     func(ctx context.Context) error { _, err := m.TryAcquire(ctx, 1); return err },
				set:     func(ctx context.Context) error { return rsemaphore.New(s.C, "s").AddPermits(ctx, 3) },
			}
		},
		"expirable SetPermits": func(w, s *locktest.Proc, opts ...rsemaphore.Option) sem {
			m := rsemaphore.NewExpirable(w.C, "s", opts...)
			return sem{
				acquire: func(ctx context.Context) error {
					_, err := m.Acquire(ctx, rsemaphore.AcquireOptions{Lease: time.Hour})
					return err
				},
				try: func(ctx context.Context) error {
					_, _, err := m.TryAcquire(ctx, rsemaphore.AcquireOptions{Lease: time.Hour})
					return err
				},
				set: func(ctx context.Context) error { return rsemaphore.NewExpirable(s.C, "s").SetPermits(ctx, 1) },
			}
		},
	}
	for name, newSem := range kinds {
		t.Run(name, func(t *testing.T) {
			locktest.InBubble(t, 2, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
				ctx := context.Background()
				start := time.Now()
				require.ErrorIs(t, newSem(ps[1], ps[0]).acquire(ctx), redcoord.ErrNotSet, "the default")
				s := newSem(ps[1], ps[0], rsemaphore.WithWaitForSet(), rsemaphore.WithMaxPollInterval(time.Hour))
				require.ErrorIs(t, s.try(ctx), redcoord.ErrNotSet, "TryAcquire does not wait")

				done := make(chan error, 1)
				go func() { done <- s.acquire(ctx) }()
				synctest.Wait()
				require.Empty(t, done, "returned before the permits were set")
				require.NoError(t, s.set(ctx))
				require.NoError(t, <-done)
				assert.Zero(t, time.Since(start), "a waiter polled: the bubble's clock moved")
			})
		})
	}
}

// An Acquire with WithWaitForSet on permits that are never set ends with
// its context, with an error matching ErrNotAcquired and ctx.Err().
func TestAcquireWaitsForSetContextEnds(t *testing.T) {
	locktest.InBubble(t, 1, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		err := rsemaphore.New(ps[0].C, "s", rsemaphore.WithWaitForSet()).Acquire(ctx, 1)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorIs(t, err, redcoord.ErrNotAcquired)
		assert.Equal(t, 5*time.Second, time.Since(start))
	})
}
