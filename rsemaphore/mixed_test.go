package rsemaphore_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/rsemaphore"
)

// Fair and unfair handles do not wait on one name at once: while waiters of
// one kind wait, a blocking Acquire of the other kind is ErrInvalidArgument
// at once, naming its kind, and writes nothing. TryAcquire, which never
// waits, is not refused.
func TestMixedFairAndUnfairWaitersRefused(t *testing.T) {
	for _, fairFirst := range []bool{false, true} {
		t.Run("first "+semMode(fairFirst), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ps := semProcs(t, 2, nil)
				ctx := context.Background()
				holder := rsemaphore.New(ps[0].C, "n")
				require.NoError(t, holder.SetPermits(ctx, 1))
				require.NoError(t, holder.Acquire(ctx, 1))
				first := rsemaphore.New(ps[1].C, "n", semOpts(fairFirst)...)
				wctx, cancel := context.WithCancel(ctx)
				defer cancel()
				waiting := semAsync(wctx, first, 1)
				synctest.Wait()
				semPending(t, waiting)

				before := semSnapshot(t, ps[0].RDB)
				other := rsemaphore.New(ps[0].C, "n", semOpts(!fairFirst)...)
				tctx, stop := context.WithTimeout(ctx, 5*time.Second) // bounds the wait on the unfixed code
				err := other.Acquire(tctx, 1)
				stop()
				require.ErrorIs(t, err, redcoord.ErrInvalidArgument)
				if fairFirst {
					assert.EqualError(t, err, `redcoord: invalid argument: rsemaphore "n": unfair Acquire: the name has WithFair waiters; use one kind of handle per name`)
				} else {
					assert.EqualError(t, err, `redcoord: invalid argument: rsemaphore "n": WithFair: the name has unfair waiters; use one kind of handle per name`)
				}
				assert.Equal(t, before, semSnapshot(t, ps[0].RDB), "the refused Acquire wrote nothing")
				ok, err := other.TryAcquire(ctx, 1)
				require.NoError(t, err)
				assert.False(t, ok)

				require.NoError(t, holder.Release(ctx, 1))
				synctest.Wait()
				require.NoError(t, semResult(t, waiting), "the first kind's waiter is served")
				cancel()
				require.NoError(t, first.Release(ctx, 1))
				require.NoError(t, other.Acquire(ctx, 1), "with no waiter left, either kind may wait")
			})
		})
	}
}
