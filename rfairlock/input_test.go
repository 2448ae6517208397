package rfairlock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rfairlock"
)

// Bad input is reported by every method as ErrInvalidArgument naming the
// argument, a closed Client as ErrClosed, another primitive's key as
// ErrWrongType; none of them changes Redis.
func TestBadInput(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		c := newClient(t, rdb)
		ctx := context.Background()
		cases := []struct {
			name string
			m    *rfairlock.Mutex
			arg  string // what the message must name
		}{
			{"empty name", rfairlock.New(c, ""), "name"},
			{"long name", rfairlock.New(c, strings.Repeat("x", 513)), "name"},
			{"brace", rfairlock.New(c, "a{b}"), "name"},
			{"bad utf-8", rfairlock.New(c, "\xff"), "name"},
			{"nil client", rfairlock.New(nil, "n"), "nil *redcoord.Client"},
			{"nil option", rfairlock.New(c, "n", nil), "opts"},
			{"bad poll", rfairlock.New(c, "n", rfairlock.WithMaxPollInterval(0)), "WithMaxPollInterval"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				for op, err := range map[string]error{
					"Lock":          tc.m.Lock(ctx),
					"LockWithLease": tc.m.LockWithLease(ctx, time.Second),
					"Unlock":        tc.m.Unlock(ctx),
					"TryLock":       second(tc.m.TryLock(ctx)),
					"IsLocked":      second(tc.m.IsLocked(ctx)),
					"HoldCount":     second(tc.m.HoldCount(ctx)),
					"ForceUnlock":   second(tc.m.ForceUnlock(ctx)),
					"QueueLength":   second(tc.m.QueueLength(ctx)),
					"Position":      second(tc.m.Position(ctx)),
				} {
					assert.ErrorIs(t, err, redcoord.ErrInvalidArgument, op)
					assert.ErrorContains(t, err, tc.arg, op)
				}
				_, _, err := tc.m.Holder(ctx)
				assert.ErrorIs(t, err, redcoord.ErrInvalidArgument, "Holder")
			})
		}
		m := rfairlock.New(c, "n")
		for _, lease := range []time.Duration{0, -time.Second, time.Microsecond} {
			err := m.LockWithLease(ctx, lease)
			assert.ErrorIs(t, err, redcoord.ErrInvalidArgument)
			assert.ErrorContains(t, err, "lease")
		}
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		for op, err := range map[string]error{"Lock": m.Lock(cancelled), "TryLock": second(m.TryLock(cancelled)),
			"LockWithLease": m.LockWithLease(cancelled, time.Second)} {
			assert.ErrorIs(t, err, context.Canceled, op)
			assert.ErrorIs(t, err, redcoord.ErrNotAcquired, op)
		}
		assert.Empty(t, keys(t, rdb), "bad input leaves Redis unchanged")

		closed, err := redcoord.New(rdb)
		require.NoError(t, err)
		require.NoError(t, closed.Close(ctx))
		assert.ErrorIs(t, rfairlock.New(closed, "n").Lock(ctx), redcoord.ErrClosed)
		assert.Empty(t, keys(t, rdb))

		require.NoError(t, rdb.Set(ctx, "rc:{str}:lock", "x", 0).Err())
		err = rfairlock.New(c, "str").Lock(ctx)
		assert.ErrorIs(t, err, redcoord.ErrWrongType)
		assert.Equal(t, "x", rdb.Get(ctx, "rc:{str}:lock").Val())
		require.NoError(t, rdb.HSet(ctx, "rc:{unfair}:lock", "k", "rlock", "o", "x", "c", 1).Err())
		assert.ErrorIs(t, rfairlock.New(c, "unfair").Lock(ctx), redcoord.ErrWrongType, "an rlock of the same name")
	})
}
