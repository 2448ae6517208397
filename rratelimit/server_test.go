package rratelimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rratelimit"
)

// The scripts do on a real redis-server what they do on miniredis, on the
// wall clock: a limit slow enough (6 a minute) that no assertion depends
// on how long a round trip takes.
func TestOnServers(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		rdb := s.Client(t)
		c, err := redcoord.New(rdb)
		require.NoError(t, err)
		defer c.Close(ctx)
		limit := rratelimit.PerMinute(6).WithBurst(3) // one every 10s
		lim := rratelimit.New(c, "srv", limit)

		r, err := lim.AllowN(ctx, 3)
		require.NoError(t, err)
		assert.True(t, r.Allowed)
		assert.Zero(t, r.Remaining)
		assert.Equal(t, limit, r.Limit)
		r, err = lim.Allow(ctx)
		require.NoError(t, err)
		assert.False(t, r.Allowed)
		assert.InDelta(t, 10*time.Second, r.RetryAfter, float64(time.Second))
		ttl := rdb.PTTL(ctx, "rc:{srv}:rate").Val()
		assert.InDelta(t, 90*time.Second, ttl, float64(time.Second), "TAT (30s) plus the period")

		// A deadline before the slot reserves nothing.
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		err = lim.Wait(dctx)
		assert.ErrorIs(t, err, redcoord.ErrNotAcquired)
		assert.ErrorContains(t, err, "nothing was reserved")
		// A cancelled wait gives its slot back.
		cctx, cancel2 := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- lim.Wait(cctx) }()
		require.Eventually(t, func() bool {
			r, err := lim.Allow(ctx)
			return err == nil && r.RetryAfter > 15*time.Second
		}, 5*time.Second, time.Millisecond, "the wait reserved the slot at 10s")
		cancel2()
		assert.ErrorContains(t, <-done, "given back")
		r, err = lim.Allow(ctx)
		require.NoError(t, err)
		assert.Less(t, r.RetryAfter, 11*time.Second, "the slot at 10s is free again")

		// SetLimit keeps the state and holds for every handle.
		require.NoError(t, lim.SetLimit(ctx, rratelimit.PerMinute(60).WithBurst(3)))
		other := rratelimit.New(c, "srv", rratelimit.PerSecond(1000))
		r, err = other.Allow(ctx)
		require.NoError(t, err)
		assert.False(t, r.Allowed, "3 events counted at 1 a second: the burst is spent")
		assert.InDelta(t, time.Second, r.RetryAfter, float64(time.Second))
		assert.Equal(t, rratelimit.PerMinute(60).WithBurst(3), r.Limit)
		assert.InDelta(t, 24*time.Hour, rdb.PTTL(ctx, "rc:{srv}:rate").Val(), float64(time.Minute))

		// A key of another type.
		require.NoError(t, rdb.Set(ctx, "rc:{str}:rate", "x", 0).Err())
		_, err = rratelimit.New(c, "str", limit).Allow(ctx)
		assert.ErrorIs(t, err, redcoord.ErrWrongType)
		assert.ErrorContains(t, err, "rc:{str}:rate")
		assert.Equal(t, "x", rdb.Get(ctx, "rc:{str}:rate").Val())
	})
}
