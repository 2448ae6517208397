package rratelimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rratelimit"
)

// The worked example of the package documentation, exactly: 10 a second
// with a burst of 3 admits 3 at once, refuses a 4th with RetryAfter
// 100ms, admits one every 100ms after that, and has its burst back after
// 300ms idle.
func TestWorkedExample(t *testing.T) {
	locktest.InBubble(t, 1, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		lim := rratelimit.New(ps[0].C, "api", rratelimit.Limit{Events: 10, Per: time.Second, Burst: 3})
		for i := range 3 {
			r, err := lim.Allow(ctx)
			require.NoError(t, err)
			assert.True(t, r.Allowed, "event %d of the burst", i)
			assert.Equal(t, 2-i, r.Remaining)
		}
		r, err := lim.Allow(ctx)
		require.NoError(t, err)
		assert.False(t, r.Allowed)
		assert.Equal(t, 100*time.Millisecond, r.RetryAfter)
		assert.Equal(t, rratelimit.Limit{Events: 10, Per: time.Second, Burst: 3}, r.Limit)

		time.Sleep(99 * time.Millisecond)
		r, err = lim.Allow(ctx)
		require.NoError(t, err)
		assert.False(t, r.Allowed)
		assert.Equal(t, time.Millisecond, r.RetryAfter)
		time.Sleep(time.Millisecond)
		r, err = lim.Allow(ctx)
		require.NoError(t, err)
		assert.True(t, r.Allowed)

		time.Sleep(300 * time.Millisecond)
		r, err = lim.AllowN(ctx, 3)
		require.NoError(t, err)
		assert.True(t, r.Allowed, "the burst is back after 300ms idle")
		assert.Zero(t, r.Remaining)
	})
}
