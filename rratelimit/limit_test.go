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

// SetLimit keeps the state: events just admitted stay counted against the
// new limit, so neither a rise nor a fall of the rate admits a burst of
// its own; the new limit holds for every handle, whatever its own.
func TestSetLimitKeepsState(t *testing.T) {
	locktest.InBubble(t, 2, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		a := rratelimit.New(ps[0].C, "set", rratelimit.PerSecond(10).WithBurst(5))
		b := rratelimit.New(ps[1].C, "set", rratelimit.PerSecond(10).WithBurst(5))
		r, err := a.AllowN(ctx, 5) // the burst, spent: 500ms of intervals
		require.NoError(t, err)
		require.True(t, r.Allowed)

		// Ten times the rate, the same burst: the 5 events count as 50ms.
		faster := rratelimit.PerSecond(100).WithBurst(5)
		require.NoError(t, b.SetLimit(ctx, faster))
		r, err = a.Allow(ctx)
		require.NoError(t, err)
		assert.False(t, r.Allowed, "a rise admits no burst: the one just spent is still spent")
		assert.Equal(t, 10*time.Millisecond, r.RetryAfter)
		assert.Equal(t, faster, r.Limit, "the stored limit wins over the handle's")
		time.Sleep(10 * time.Millisecond)
		r, err = a.Allow(ctx)
		require.NoError(t, err)
		assert.True(t, r.Allowed)

		// A tenth of the rate: the 5 events ahead (50ms) count as 5s.
		slower := rratelimit.PerSecond(1).WithBurst(5)
		require.NoError(t, a.SetLimit(ctx, slower))
		r, err = b.Allow(ctx)
		require.NoError(t, err)
		assert.False(t, r.Allowed, "a fall does not forget the events just admitted")
		assert.Equal(t, time.Second, r.RetryAfter)
		got, err := b.Limit(ctx)
		require.NoError(t, err)
		assert.Equal(t, slower, got)

		// SetLimit on an idle name stores it: a handle made with another
		// limit uses it.
		require.NoError(t, a.SetLimit(ctx, slower))
		time.Sleep(time.Hour)
		c := rratelimit.New(ps[1].C, "set", rratelimit.PerSecond(1000))
		got, err = c.Limit(ctx)
		require.NoError(t, err)
		assert.Equal(t, slower, got, "a limit that SetLimit set outlives the state by a day")
	})
}

// SetLimit while waits are queued: the waits keep their slots, and the
// next ones come at the new rate, after them for a fall.
func TestSetLimitWithWaitsQueued(t *testing.T) {
	locktest.InBubble(t, 2, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		a := rratelimit.New(ps[0].C, "q", rratelimit.PerSecond(10))
		require.NoError(t, a.Wait(ctx)) // at 0
		start := time.Now()
		done := make(chan time.Duration, 3)
		for range 3 { // slots at 100, 200, 300ms
			go func() {
				assert.NoError(t, a.Wait(ctx))
				done <- time.Since(start)
			}()
		}
		time.Sleep(50 * time.Millisecond)
		require.NoError(t, a.SetLimit(ctx, rratelimit.PerSecond(1)))
		for i := range 3 {
			assert.Equal(t, time.Duration(i+1)*100*time.Millisecond, <-done, "wait %d keeps its slot", i)
		}
		// At the change TAT was 350ms ahead, 3.5 intervals of 100ms: they
		// count as 3.5s of the new limit, and the next slot is then.
		require.NoError(t, a.Wait(ctx))
		assert.Equal(t, 3550*time.Millisecond, time.Since(start))
	})
}

// The limiter's hash expires by itself once idle: one period past its
// TAT for a limit that New gave, a day past its last use for one that
// SetLimit set.
func TestIdleKeyExpires(t *testing.T) {
	locktest.InBubble(t, 1, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		lim := rratelimit.New(ps[0].C, "idle", rratelimit.PerMinute(6).WithBurst(3))
		r, err := lim.AllowN(ctx, 3) // TAT 30s ahead
		require.NoError(t, err)
		require.True(t, r.Allowed)
		assert.Equal(t, 90*time.Second, mr.TTL("rc:{idle}:rate"), "TAT (30s) plus the period (60s)")
		time.Sleep(90 * time.Second)
		assert.False(t, mr.Exists("rc:{idle}:rate"))

		require.NoError(t, lim.SetLimit(ctx, rratelimit.PerMinute(6)))
		assert.Equal(t, 24*time.Hour, mr.TTL("rc:{idle}:rate"))
		_, err = lim.Allow(ctx)
		require.NoError(t, err)
		assert.Equal(t, 24*time.Hour, mr.TTL("rc:{idle}:rate"), "each use keeps a set limit a day")
		time.Sleep(24 * time.Hour)
		assert.False(t, mr.Exists("rc:{idle}:rate"))
	})
}
