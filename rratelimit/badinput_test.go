package rratelimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rlock"
	"github.com/redcoord/redcoord/rratelimit"
)

// Every bad argument is ErrInvalidArgument naming it, from every method,
// at once, and leaves Redis as it was.
func TestBadInput(t *testing.T) {
	locktest.InBubble(t, 1, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		c := ps[0].C
		ok := rratelimit.PerSecond(10).WithBurst(2)
		// A limiter in use: its hash must not change.
		_, err := rratelimit.New(c, "used", ok).Allow(ctx)
		require.NoError(t, err)
		before := mr.Dump()

		for _, tc := range []struct {
			what string
			lim  *rratelimit.Limiter
			n    int
			arg  string // in the error
		}{
			{"nil Client", rratelimit.New(nil, "x", ok), 1, "c: nil"},
			{"empty name", rratelimit.New(c, "", ok), 1, "name: must not be empty"},
			{"brace in name", rratelimit.New(c, "a{b}", ok), 1, "name:"},
			{"zero events", rratelimit.New(c, "x", rratelimit.Limit{Per: time.Second}), 1, "limit.Events: must be from 1"},
			{"negative events", rratelimit.New(c, "x", rratelimit.PerSecond(-3)), 1, "limit.Events"},
			{"zero period", rratelimit.New(c, "x", rratelimit.Limit{Events: 1}), 1, "limit.Per: must be at least 1µs"},
			{"negative period", rratelimit.New(c, "x", rratelimit.Limit{Events: 1, Per: -time.Second}), 1, "limit.Per"},
			{"over a million a second", rratelimit.New(c, "x", rratelimit.PerSecond(2_000_000)), 1, "more than one a microsecond"},
			{"negative burst", rratelimit.New(c, "x", ok.WithBurst(-1)), 1, "limit.Burst"},
			{"nil option", rratelimit.New(c, "x", ok, nil), 1, "opts: nil Option"},
			{"n zero", rratelimit.New(c, "used", ok), 0, "n: must be from 1"},
			{"n negative", rratelimit.New(c, "used", ok), -1, "n: must be from 1"},
			{"n above the burst", rratelimit.New(c, "used", ok), 3, `rratelimit "used": n: 3 events are above the burst (10 per 1s, burst 2)`},
		} {
			_, err := tc.lim.AllowN(ctx, tc.n)
			assert.ErrorIs(t, err, redcoord.ErrInvalidArgument, tc.what)
			assert.ErrorContains(t, err, tc.arg, tc.what)
			err = tc.lim.WaitN(ctx, tc.n)
			assert.ErrorIs(t, err, redcoord.ErrInvalidArgument, tc.what)
			assert.ErrorContains(t, err, tc.arg, tc.what)
			if tc.n == 1 {
				_, err = tc.lim.Limit(ctx)
				assert.ErrorIs(t, err, redcoord.ErrInvalidArgument, tc.what)
				assert.ErrorIs(t, tc.lim.SetLimit(ctx, ok), redcoord.ErrInvalidArgument, tc.what)
			}
			assert.Equal(t, before, mr.Dump(), "Redis changed: %s", tc.what)
		}
		err = rratelimit.New(c, "used", ok).SetLimit(ctx, rratelimit.Limit{Events: 5})
		assert.ErrorIs(t, err, redcoord.ErrInvalidArgument)
		assert.ErrorContains(t, err, "limit.Per")
		assert.Equal(t, before, mr.Dump(), "Redis changed")
	})
}

// A key of another type, or a hash that a lock wrote, is ErrWrongType
// naming the key, and is left as it was.
func TestWrongType(t *testing.T) {
	locktest.InBubble(t, 1, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		c := ps[0].C
		require.NoError(t, mr.Set("rc:{s}:rate", "a string"))
		mr.HSet("rc:{h}:rate", "k", "rlock", "o", "someone")
		mr.HSet("rc:{f}:rate", "field", "foreign")
		before := mr.Dump()
		for _, name := range []string{"s", "h", "f"} {
			lim := rratelimit.New(c, name, rratelimit.PerSecond(1))
			_, err := lim.Allow(ctx)
			assert.ErrorIs(t, err, redcoord.ErrWrongType, name)
			assert.ErrorContains(t, err, "rc:{"+name+"}:rate")
			assert.ErrorIs(t, lim.Wait(ctx), redcoord.ErrWrongType, name)
			assert.ErrorIs(t, lim.SetLimit(ctx, rratelimit.PerSecond(2)), redcoord.ErrWrongType, name)
			_, err = lim.Limit(ctx)
			assert.ErrorIs(t, err, redcoord.ErrWrongType, name)
		}
		assert.Equal(t, before, mr.Dump())

		// A lock and a limiter of one name are separate objects.
		m := rlock.New(c, "both")
		require.NoError(t, m.Lock(ctx))
		r, err := rratelimit.New(c, "both", rratelimit.PerSecond(1)).Allow(ctx)
		require.NoError(t, err)
		assert.True(t, r.Allowed)
		require.NoError(t, m.Unlock(ctx))
	})
}
