package locktest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/redistest"
)

// Mutex is a lock handle as BadInput and Basics call it: a
// redcoord.Locker with a fixed lease, a forced unlock, the reads of the
// lock's state, and its hold's owner and fencing token.
type Mutex interface {
	redcoord.Locker
	Owner() string
	Token() uint64
	LockWithLease(ctx context.Context, lease time.Duration) error
	ForceUnlock(ctx context.Context) (bool, error)
	IsLocked(ctx context.Context) (bool, error)
	HoldCount(ctx context.Context) (int64, error)
	Holder(ctx context.Context) (redcoord.Holder, bool, error)
}

// BadInput checks, against both servers, that bad input is reported by every
// method as ErrInvalidArgument naming the argument, a done ctx as
// ErrNotAcquired and ctx.Err(), a closed Client as ErrClosed, and another
// primitive's key as ErrWrongType; none of them changes Redis.
//
// newM is the package's New; badPoll is WithMaxPollInterval(0) (the zero O
// is the nil Option); otherKind names another primitive whose lock hash
// newM must refuse; more returns the errors of the package's own methods.
func BadInput[M Mutex, O any](t *testing.T, newM func(*redcoord.Client, string, ...O) M, badPoll O,
	otherKind string, more func(context.Context, M) map[string]error) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		c := NewClient(t, rdb)
		ctx := context.Background()
		var nilOpt O
		cases := []struct {
			name string
			m    M
			arg  string // what the message must name
		}{
			{"empty name", newM(c, ""), "name"},
			{"long name", newM(c, strings.Repeat("x", 513)), "name"},
			{"brace", newM(c, "a{b}"), "name"},
			{"bad utf-8", newM(c, "\xff"), "name"},
			{"nil client", newM(nil, "n"), "nil *redcoord.Client"},
			{"nil option", newM(c, "n", nilOpt), "opts"},
			{"bad poll", newM(c, "n", badPoll), "WithMaxPollInterval"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				ops := map[string]error{
					"Lock":          tc.m.Lock(ctx),
					"LockWithLease": tc.m.LockWithLease(ctx, time.Second),
					"Unlock":        tc.m.Unlock(ctx),
					"TryLock":       Second(tc.m.TryLock(ctx)),
					"IsLocked":      Second(tc.m.IsLocked(ctx)),
					"HoldCount":     Second(tc.m.HoldCount(ctx)),
					"ForceUnlock":   Second(tc.m.ForceUnlock(ctx)),
				}
				_, _, ops["Holder"] = tc.m.Holder(ctx)
				if more != nil {
					for op, err := range more(ctx, tc.m) {
						ops[op] = err
					}
				}
				for op, err := range ops {
					assert.ErrorIs(t, err, redcoord.ErrInvalidArgument, op)
					assert.ErrorContains(t, err, tc.arg, op)
				}
			})
		}
		m := newM(c, "n")
		for _, lease := range []time.Duration{0, -time.Second, time.Microsecond} {
			err := m.LockWithLease(ctx, lease)
			assert.ErrorIs(t, err, redcoord.ErrInvalidArgument)
			assert.ErrorContains(t, err, "lease")
		}
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		for op, err := range map[string]error{"Lock": m.Lock(cancelled), "TryLock": Second(m.TryLock(cancelled)),
			"LockWithLease": m.LockWithLease(cancelled, time.Second)} {
			assert.ErrorIs(t, err, context.Canceled, op)
			assert.ErrorIs(t, err, redcoord.ErrNotAcquired, op)
		}
		assert.Empty(t, Keys(t, rdb), "bad input leaves Redis unchanged")

		closed, err := redcoord.New(rdb)
		require.NoError(t, err)
		require.NoError(t, closed.Close(ctx))
		assert.ErrorIs(t, newM(closed, "n").Lock(ctx), redcoord.ErrClosed)
		assert.Empty(t, Keys(t, rdb))

		require.NoError(t, rdb.Set(ctx, "rc:{str}:lock", "x", 0).Err())
		err = newM(c, "str").Lock(ctx)
		assert.ErrorIs(t, err, redcoord.ErrWrongType)
		assert.Equal(t, "x", rdb.Get(ctx, "rc:{str}:lock").Val())
		require.NoError(t, rdb.HSet(ctx, "rc:{other}:lock", "k", otherKind, "o", "x", "c", 1).Err())
		assert.ErrorIs(t, newM(c, "other").Lock(ctx), redcoord.ErrWrongType,
			"a lock of kind %s under the same name", otherKind)
	})
}
