package rsemaphore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rsemaphore"
)

// expInvalid asserts that err is an ErrInvalidArgument naming arg.
func expInvalid(t *testing.T, err error, arg, what string) {
	t.Helper()
	if assert.ErrorIs(t, err, redcoord.ErrInvalidArgument, what) {
		assert.ErrorContains(t, err, `invalid argument: rsemaphore.ExpirableSemaphore "x": `+arg+": ", what)
	}
}

// expEvery runs every method of s and returns their errors by name; p is
// the permit Release and Extend are given.
func expEvery(ctx context.Context, s *rsemaphore.ExpirableSemaphore, p rsemaphore.Permit) map[string]error {
	errs := map[string]error{
		"TrySetPermits": locktest.Second(s.TrySetPermits(ctx, 1)),
		"SetPermits":    s.SetPermits(ctx, 1),
		"AddPermits":    s.AddPermits(ctx, 1),
		"Acquire":       locktest.Second(s.Acquire(ctx, rsemaphore.AcquireOptions{})),
		"Release":       s.Release(ctx, p),
		"Extend":        s.Extend(ctx, p, time.Second),
		"Available":     locktest.Second(s.Available(ctx)),
		"Acquired":      locktest.Second(s.Acquired(ctx)),
	}
	_, _, errs["TryAcquire"] = s.TryAcquire(ctx, rsemaphore.AcquireOptions{})
	return errs
}

// Bad arguments are ErrInvalidArgument naming the argument, found before
// any I/O; WithFair, which an expirable semaphore cannot honour, is
// reported by every method.
func TestExpirableBadInput(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx := context.Background()
		a := newExpProc(t, srv)
		s := rsemaphore.NewExpirable(a.c, "x")
		require.NoError(t, s.SetPermits(ctx, 2))
		p := expAcquire(t, s, rsemaphore.AcquireOptions{})

		a.rt.Reset()
		for _, lease := range []time.Duration{-time.Second, -time.Nanosecond, 500 * time.Microsecond, time.Millisecond - 1} {
			_, err := s.Acquire(ctx, rsemaphore.AcquireOptions{Lease: lease})
			expInvalid(t, err, "Lease", fmt.Sprintf("Acquire with a lease of %v", lease))
			_, ok, err := s.TryAcquire(ctx, rsemaphore.AcquireOptions{Lease: lease})
			assert.False(t, ok)
			expInvalid(t, err, "Lease", fmt.Sprintf("TryAcquire with a lease of %v", lease))
			expInvalid(t, s.Extend(ctx, p, lease), "lease", fmt.Sprintf("Extend by %v", lease))
		}
		expInvalid(t, s.Extend(ctx, p, 0), "lease", "Extend by 0")
		expInvalid(t, s.Extend(ctx, rsemaphore.Permit{}, time.Second), "p", "Extend of a zero Permit")
		expInvalid(t, s.Release(ctx, rsemaphore.Permit{}), "p", "Release of a zero Permit")
		expInvalid(t, locktest.Second(s.TrySetPermits(ctx, 0)), "n", "TrySetPermits(0)")
		expInvalid(t, s.SetPermits(ctx, -1), "n", "SetPermits(-1)")
		expInvalid(t, s.AddPermits(ctx, 0), "delta", "AddPermits(0)")
		for name, h := range map[string]*rsemaphore.ExpirableSemaphore{
			"WithFair":            rsemaphore.NewExpirable(a.c, "x", rsemaphore.WithFair()),
			"WithMaxPollInterval": rsemaphore.NewExpirable(a.c, "x", rsemaphore.WithMaxPollInterval(0)),
		} {
			for op, err := range expEvery(ctx, h, p) {
				expInvalid(t, err, name, op)
			}
		}
		assert.Zero(t, a.rt.Load(), "bad input was sent to Redis")
		av, acq := expCounts(t, s)
		assert.Equal(t, [2]int64{1, 1}, [2]int64{av, acq})
		require.NoError(t, s.Release(ctx, p))
	})
}

// Permits never set, or a total of 0, can never be acquired: Acquire says
// so at once instead of waiting for its context.
func TestExpirableNothingToAcquire(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		a := newExpProc(t, srv)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		unset := rsemaphore.NewExpirable(a.c, "unset")
		_, err := unset.Acquire(ctx, rsemaphore.AcquireOptions{})
		assert.ErrorIs(t, err, redcoord.ErrNotSet)
		assert.ErrorIs(t, err, redcoord.ErrNotAcquired)
		assert.ErrorContains(t, err, `"unset"`, "the message names the semaphore")
		_, ok, err := unset.TryAcquire(ctx, rsemaphore.AcquireOptions{Lease: time.Second})
		assert.False(t, ok)
		assert.ErrorIs(t, err, redcoord.ErrNotSet)

		zero := rsemaphore.NewExpirable(a.c, "zero")
		require.NoError(t, zero.AddPermits(ctx, 1))
		require.NoError(t, zero.AddPermits(ctx, -1))
		_, err = zero.Acquire(ctx, rsemaphore.AcquireOptions{})
		assert.ErrorIs(t, err, redcoord.ErrInvalidArgument)
		assert.ErrorContains(t, err, "total is 0")
		_, ok, err = zero.TryAcquire(ctx, rsemaphore.AcquireOptions{})
		assert.False(t, ok)
		assert.ErrorIs(t, err, redcoord.ErrInvalidArgument)
		av, acq := expCounts(t, zero)
		assert.Equal(t, [2]int64{0, 0}, [2]int64{av, acq})
		assert.NoError(t, ctx.Err(), "an acquire waited")

		hub, err := a.c.Hub()
		require.NoError(t, err)
		assert.Zero(t, hub.Stats().Waiters)
		require.NoError(t, zero.AddPermits(ctx, 1))
		require.NoError(t, zero.Release(ctx, expAcquire(t, zero, rsemaphore.AcquireOptions{})))
	})
}

// A key of another type, or a name a counting Semaphore uses, is
// ErrWrongType from every method, and is left as it was.
func TestExpirableWrongType(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx := context.Background()
		a := newExpProc(t, srv)
		require.NoError(t, a.rdb.Set(ctx, "rc:{str}:permits", "v", 0).Err())
		require.NoError(t, rsemaphore.NewExpirable(a.c, "zset").SetPermits(ctx, 2))
		require.NoError(t, a.rdb.Set(ctx, "rc:{zset}:sem-leases", "v", 0).Err())
		counting := rsemaphore.New(a.c, "counting")
		require.NoError(t, counting.SetPermits(ctx, 2))
		require.NoError(t, counting.Acquire(ctx, 1))
		keys := locktest.Keys(t, a.rdb)

		p := rsemaphore.Permit{ID: "some-id"}
		for _, name := range []string{"str", "zset", "counting"} {
			for op, err := range expEvery(ctx, rsemaphore.NewExpirable(a.c, name), p) {
				assert.ErrorIs(t, err, redcoord.ErrWrongType, "%s on %s", op, name)
			}
		}
		assert.ElementsMatch(t, keys, locktest.Keys(t, a.rdb), "keys written")
		v, err := a.rdb.Get(ctx, "rc:{str}:permits").Result()
		require.NoError(t, err)
		assert.Equal(t, "v", v)
		st, err := counting.State(ctx)
		require.NoError(t, err)
		assert.Equal(t, rsemaphore.State{Set: true, Available: 1, Total: 2}, st)

		// And the other way round.
		expirable := rsemaphore.NewExpirable(a.c, "expirable")
		require.NoError(t, expirable.SetPermits(ctx, 2))
		sem := rsemaphore.New(a.c, "expirable")
		assert.ErrorIs(t, sem.Acquire(ctx, 1), redcoord.ErrWrongType)
		assert.ErrorIs(t, locktest.Second(sem.TryAcquire(ctx, 1)), redcoord.ErrWrongType)
		assert.ErrorIs(t, sem.Release(ctx, 1), redcoord.ErrWrongType)
		assert.ErrorIs(t, locktest.Second(sem.Available(ctx)), redcoord.ErrWrongType)
		av, acq := expCounts(t, expirable)
		assert.Equal(t, [2]int64{2, 0}, [2]int64{av, acq})
	})
}
