package rsemaphore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rsemaphore"
)

// A bad argument to New is ErrInvalidArgument naming the argument, from
// every method, with no I/O.
func TestBadNewArguments(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		rt := &redistest.RoundTrips{}
		rdb.AddHook(rt)
		c := locktest.NewClient(t, rdb)
		ctx := context.Background()
		cases := []struct {
			name string
			s    *rsemaphore.Semaphore
			arg  string // what the message must name
		}{
			{"nil client", rsemaphore.New(nil, "n"), "nil *redcoord.Client"},
			{"empty name", rsemaphore.New(c, ""), "name"},
			{"long name", rsemaphore.New(c, strings.Repeat("x", 513)), "name"},
			{"brace", rsemaphore.New(c, "a{b}"), "name"},
			{"closing brace", rsemaphore.New(c, "a}"), "name"},
			{"nil option", rsemaphore.New(c, "n", nil), "opts"},
			{"nil option after a good one", rsemaphore.New(c, "n", rsemaphore.WithFair(), nil), "opts"},
			{"zero poll", rsemaphore.New(c, "n", rsemaphore.WithMaxPollInterval(0)), "WithMaxPollInterval"},
			{"negative poll", rsemaphore.New(c, "n", rsemaphore.WithMaxPollInterval(-time.Second)), "WithMaxPollInterval"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				for op, err := range semEveryMethod(ctx, tc.s) {
					assert.ErrorIs(t, err, redcoord.ErrInvalidArgument, op)
					assert.ErrorContains(t, err, tc.arg, op)
				}
			})
		}
		assert.Zero(t, rt.Load(), "bad input does no I/O")
		assert.Empty(t, locktest.Keys(t, rdb), "bad input leaves Redis unchanged")
	})
}

// A permit count below 1 or above MaxPermits (or an AddPermits of 0, or
// beyond MaxPermits either way) is ErrInvalidArgument naming it, with no
// I/O.
func TestBadCounts(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		rt := &redistest.RoundTrips{}
		rdb.AddHook(rt)
		ctx := context.Background()
		for _, s := range []*rsemaphore.Semaphore{
			rsemaphore.New(locktest.NewClient(t, rdb), "n"),
			rsemaphore.New(locktest.NewClient(t, rdb), "n", rsemaphore.WithFair()),
		} {
			require.NoError(t, s.SetPermits(ctx, 3))
			before := semSnapshot(t, rdb)
			rt.Reset()
			for _, n := range []int64{0, -1, -1 << 62, rsemaphore.MaxPermits + 1, 1 << 62} {
				want := "n: must be at least 1"
				if n > 0 {
					want = "n: must be at most 9007199254740991"
				}
				for op, err := range map[string]error{
					"Acquire":       s.Acquire(ctx, n),
					"TryAcquire":    locktest.Second(s.TryAcquire(ctx, n)),
					"Release":       s.Release(ctx, n),
					"TrySetPermits": locktest.Second(s.TrySetPermits(ctx, n)),
					"SetPermits":    s.SetPermits(ctx, n),
				} {
					assert.ErrorIs(t, err, redcoord.ErrInvalidArgument, "%s(%d)", op, n)
					assert.ErrorContains(t, err, want, "%s(%d)", op, n)
				}
			}
			for _, delta := range []int64{0, rsemaphore.MaxPermits + 1, -rsemaphore.MaxPermits - 1} {
				err := s.AddPermits(ctx, delta)
				assert.ErrorIs(t, err, redcoord.ErrInvalidArgument, "AddPermits(%d)", delta)
				assert.ErrorContains(t, err, "delta", "AddPermits(%d)", delta)
			}
			x := rsemaphore.NewExpirable(locktest.NewClient(t, rdb), "x")
			_, err := x.TrySetPermits(ctx, rsemaphore.MaxPermits+1)
			assert.ErrorIs(t, err, redcoord.ErrInvalidArgument)
			assert.ErrorContains(t, err, "n: must be at most")
			assert.ErrorIs(t, x.AddPermits(ctx, rsemaphore.MaxPermits+1), redcoord.ErrInvalidArgument)
			assert.Zero(t, rt.Load(), "no I/O")
			assert.Equal(t, before, semSnapshot(t, rdb), "Redis unchanged")
		}
	})
}

// A request for more permits than the total could never be served: Acquire
// and TryAcquire report ErrInvalidArgument at once, in one round trip, and
// a fair handle is not left queued.
func TestMoreThanTotal(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		rt := &redistest.RoundTrips{}
		rdb.AddHook(rt)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a hang guard
		defer cancel()
		c := locktest.NewClient(t, rdb)
		for _, s := range []*rsemaphore.Semaphore{rsemaphore.New(c, "n"), rsemaphore.New(c, "n", rsemaphore.WithFair())} {
			require.NoError(t, s.SetPermits(ctx, 3))
			require.NoError(t, s.Acquire(ctx, 2)) // loads the scripts; 1 free
			before := semSnapshot(t, rdb)
			rt.Reset()
			for op, err := range map[string]error{"Acquire": s.Acquire(ctx, 4), "TryAcquire": locktest.Second(s.TryAcquire(ctx, 4))} {
				assert.ErrorIs(t, err, redcoord.ErrInvalidArgument, op)
				assert.ErrorContains(t, err, "n: 4 permits exceed the semaphore's total of 3", op)
				assert.NotErrorIs(t, err, redcoord.ErrNotAcquired, op)
			}
			assert.NoError(t, ctx.Err(), "Acquire waited")
			assert.Equal(t, int64(2), rt.Load(), "one round trip each")
			assert.Equal(t, before, semSnapshot(t, rdb), "Redis unchanged")
			assert.Zero(t, semHubWaiters(t, c))
			require.NoError(t, s.Release(ctx, 2))
		}
	})
}

// Permits never set are ErrNotSet at once, naming the semaphore, from
// everything but State and the setters, in one round trip each; an
// Acquire's error also matches ErrNotAcquired. Nothing is written: a
// misspelt name leaves no trace.
func TestNotSet(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		rt := &redistest.RoundTrips{}
		rdb.AddHook(rt)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a hang guard
		defer cancel()
		c := locktest.NewClient(t, rdb)
		semWarmUp(t, rsemaphore.New(c, "warm"))
		require.NoError(t, rdb.FlushAll(ctx).Err())
		for _, s := range []*rsemaphore.Semaphore{rsemaphore.New(c, "unset"), rsemaphore.New(c, "unset", rsemaphore.WithFair())} {
			rt.Reset()
			errAcquire := s.Acquire(ctx, 1)
			assert.ErrorIs(t, errAcquire, redcoord.ErrNotAcquired)
			assert.NoError(t, ctx.Err(), "Acquire waited")
			_, errTry := s.TryAcquire(ctx, 1)
			_, errAvailable := s.Available(ctx)
			_, errDrain := s.Drain(ctx)
			for op, err := range map[string]error{
				"Acquire":    errAcquire,
				"TryAcquire": errTry,
				"Release":    s.Release(ctx, 1),
				"Available":  errAvailable,
				"Drain":      errDrain,
			} {
				assert.ErrorIs(t, err, redcoord.ErrNotSet, op)
				assert.ErrorContains(t, err, `"unset"`, op)
				assert.ErrorContains(t, err, "TrySetPermits", op)
			}
			assert.Equal(t, int64(5), rt.Load(), "one round trip each (an Acquire on an unset semaphore runs sem_leave)")
			assert.Equal(t, rsemaphore.State{}, semState(t, s))
			assert.Empty(t, locktest.Keys(t, rdb), "nothing written (sem_leave writes the request's x: marker)")
			require.NoError(t, rdb.FlushAll(ctx).Err())
			assert.Zero(t, semHubWaiters(t, c))
		}
	})
}

// A done context (but for Release) and a closed Client are refused before
// any I/O; an acquire also says what did not happen (ErrNotAcquired).
func TestDoneContextAndClosedClient(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		setter := rsemaphore.New(locktest.NewClient(t, rdb), "n")
		require.NoError(t, setter.SetPermits(ctx, 3))
		before := semSnapshot(t, rdb)
		rt := &redistest.RoundTrips{}
		rdb.AddHook(rt)
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		closed, err := redcoord.New(rdb)
		require.NoError(t, err)
		require.NoError(t, closed.Close(ctx))
		for _, tc := range []struct {
			name string
			ctx  context.Context
			s    *rsemaphore.Semaphore
			want error
		}{
			{"cancelled", cancelled, rsemaphore.New(locktest.NewClient(t, rdb), "n"), context.Canceled},
			{"cancelled, fair", cancelled, rsemaphore.New(locktest.NewClient(t, rdb), "n", rsemaphore.WithFair()), context.Canceled},
			{"closed", ctx, rsemaphore.New(closed, "n"), redcoord.ErrClosed},
			{"closed, fair", ctx, rsemaphore.New(closed, "n", rsemaphore.WithFair()), redcoord.ErrClosed},
		} {
			rt.Reset()
			for op, err := range semEveryMethod(tc.ctx, tc.s) {
				if op == "Release" && tc.ctx == cancelled {
					// A done ctx does not stop a release (see
					// TestDoneRelease): it is sent, and refused.
					assert.ErrorIs(t, err, redcoord.ErrNotHeld, "%s: %s", tc.name, op)
					continue
				}
				assert.ErrorIs(t, err, tc.want, "%s: %s", tc.name, op)
				if strings.Contains(op, "Acquire") {
					assert.ErrorIs(t, err, redcoord.ErrNotAcquired, "%s: %s", tc.name, op)
				}
			}
			if tc.ctx != cancelled {
				assert.Zero(t, rt.Load(), "%s: no I/O", tc.name)
			}
		}
		assert.Equal(t, before, semSnapshot(t, rdb))
	})
}

// A key of the wrong type under any of the semaphore's keys, a hash that
// redcoord did not write, or an ExpirableSemaphore of the same name, is
// ErrWrongType from every method, and is left as it was.
func TestWrongType(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		c := locktest.NewClient(t, rdb)
		ctx := context.Background()
		for _, part := range []string{"permits", "sem-queue", "sem-alive", "sem-waiting", "sem-waiters", "done"} {
			key := "rc:{" + part + "}:" + part
			require.NoError(t, rdb.Set(ctx, key, "x", 0).Err())
			for _, s := range []*rsemaphore.Semaphore{rsemaphore.New(c, part), rsemaphore.New(c, part, rsemaphore.WithFair())} {
				for op, err := range semEveryMethod(ctx, s) {
					assert.ErrorIs(t, err, redcoord.ErrWrongType, "%s: %s", key, op)
				}
			}
			assert.Equal(t, "x", rdb.Get(ctx, key).Val())
			assert.Equal(t, []string{key}, locktest.Keys(t, rdb), "nothing written beside %s", key)
			require.NoError(t, rdb.Del(ctx, key).Err())
		}

		require.NoError(t, rdb.HSet(ctx, "rc:{hash}:permits", "a", "5", "t", "5").Err())
		for op, err := range semEveryMethod(ctx, rsemaphore.New(c, "hash")) {
			assert.ErrorIs(t, err, redcoord.ErrWrongType, "a hash without a kind: %s", op)
			assert.ErrorContains(t, err, "did not write", op)
		}
		require.NoError(t, rdb.Del(ctx, "rc:{hash}:permits").Err())

		x := rsemaphore.NewExpirable(c, "x")
		require.NoError(t, x.SetPermits(ctx, 3))
		_, err := x.Acquire(ctx, rsemaphore.AcquireOptions{Lease: time.Minute})
		require.NoError(t, err)
		before := semSnapshot(t, rdb)
		for _, s := range []*rsemaphore.Semaphore{rsemaphore.New(c, "x"), rsemaphore.New(c, "x", rsemaphore.WithFair())} {
			for op, err := range semEveryMethod(ctx, s) {
				assert.ErrorIs(t, err, redcoord.ErrWrongType, "an ExpirableSemaphore's name: %s", op)
				assert.ErrorContains(t, err, "rsemaphore-expirable", op)
			}
		}
		assert.Equal(t, before, semSnapshot(t, rdb))
		assert.Zero(t, semHubWaiters(t, c))
	})
}

// Releasing more than is held (available would exceed the total) is
// ErrNotHeld, and writes nothing.
func TestReleaseMoreThanHeld(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		s := rsemaphore.New(locktest.NewClient(t, rdb), "n")
		require.NoError(t, s.SetPermits(ctx, 3))
		before := semSnapshot(t, rdb)
		err := s.Release(ctx, 1)
		assert.ErrorIs(t, err, redcoord.ErrNotHeld, "all available")
		assert.ErrorContains(t, err, "over the total of 3")
		assert.Equal(t, before, semSnapshot(t, rdb))

		require.NoError(t, s.Acquire(ctx, 2))
		before = semSnapshot(t, rdb)
		assert.ErrorIs(t, s.Release(ctx, 3), redcoord.ErrNotHeld, "3 of 2 held")
		assert.Equal(t, before, semSnapshot(t, rdb))
		require.NoError(t, s.Release(ctx, 2))
		before = semSnapshot(t, rdb)
		assert.ErrorIs(t, s.Release(ctx, 1), redcoord.ErrNotHeld, "released twice")
		assert.Equal(t, before, semSnapshot(t, rdb))
		assert.Equal(t, int64(3), semAvailable(t, s))
	})
}
