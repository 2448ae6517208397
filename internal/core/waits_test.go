package core_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/errs"
)

// While the last acquire on a key drops the Client's registration, a new
// acquire on that key waits for the drop, no longer than its context; an
// acquire on another key does not wait, and neither does one after the
// drop ended.
func TestEnterWaitsForTheDropOfItsKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		var w core.Waits
		wt, err := w.Enter(ctx, "a")
		require.NoError(t, err)
		require.False(t, wt.Leave(), "the last acquire")
		assert.False(t, w.Waiting("a"), "nobody waits while the drop runs")

		other, err := w.Enter(ctx, "b")
		require.NoError(t, err, "another key does not wait")
		assert.False(t, other.Exit(nil))

		sctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err = w.EnterSized(sctx, "a", 1)
		require.ErrorIs(t, err, errs.ErrNotAcquired)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 50*time.Millisecond, time.Since(start))
		_, err = w.Join(sctx, "a")
		require.ErrorIs(t, err, context.DeadlineExceeded)

		entered := make(chan *core.Wait, 1)
		go func() {
			wt, err := w.Enter(ctx, "a")
			assert.NoError(t, err)
			entered <- wt
		}()
		synctest.Wait()
		require.Empty(t, entered, "the same key waits for the drop")
		wt.Left()
		next := <-entered
		assert.NotSame(t, wt, next, "a new record")
		assert.True(t, w.Waiting("a"))
		joined, err := w.Join(ctx, "a")
		require.NoError(t, err)
		assert.Same(t, next, joined, "Join counts an acquire in where others wait")
		assert.True(t, joined.Exit(nil))
		assert.False(t, next.Exit(func() { t.Error("nothing registered: no drop") }))
		assert.False(t, w.Waiting("a"))
		joined, err = w.Join(ctx, "a")
		require.NoError(t, err)
		assert.Nil(t, joined, "nobody waits: Join counts nothing")
	})
}
