package rsemaphore_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rsemaphore"
)

// The Semaphore's behaviour, one operation at a time, against both servers.
// The helpers the Semaphore's test files share are in semhelpers_test.go.

// TrySetPermits sets the total once; SetPermits and AddPermits change it,
// and an unset semaphore counts as 0 for AddPermits.
func TestSetPermits(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx := context.Background()
		rdb := srv.Client(t)
		a := rsemaphore.New(locktest.NewClient(t, rdb), "n")
		b := rsemaphore.New(locktest.NewClient(t, rdb), "n")
		assert.Equal(t, rsemaphore.State{}, semState(t, a), "never set")

		ok, err := a.TrySetPermits(ctx, 5)
		require.NoError(t, err)
		assert.True(t, ok)
		ok, err = b.TrySetPermits(ctx, 7)
		require.NoError(t, err)
		assert.False(t, ok, "set twice")
		assert.Equal(t, rsemaphore.State{Set: true, Available: 5, Total: 5}, semState(t, b))

		require.NoError(t, b.SetPermits(ctx, 8))
		assert.Equal(t, rsemaphore.State{Set: true, Available: 8, Total: 8}, semState(t, a))
		require.NoError(t, a.AddPermits(ctx, 2))
		assert.Equal(t, rsemaphore.State{Set: true, Available: 10, Total: 10}, semState(t, a))
		require.NoError(t, a.AddPermits(ctx, -4))
		assert.Equal(t, rsemaphore.State{Set: true, Available: 6, Total: 6}, semState(t, a))
		err = a.AddPermits(ctx, -7)
		assert.ErrorIs(t, err, redcoord.ErrInvalidArgument, "a negative total")
		assert.ErrorContains(t, err, "delta")
		assert.Equal(t, rsemaphore.State{Set: true, Available: 6, Total: 6}, semState(t, a), "unchanged")
		assert.ElementsMatch(t, []string{"rc:{n}:permits", "rc:{n}:done"}, locktest.Keys(t, rdb),
			"the total needs one key, beside the sets' markers")
		assert.Greater(t, rdb.PTTL(ctx, "rc:{n}:done").Val(), time.Duration(0), "the markers go by themselves")
		assert.Equal(t, time.Duration(-1), rdb.PTTL(ctx, "rc:{n}:permits").Val(), "the total has no TTL")

		fresh := rsemaphore.New(locktest.NewClient(t, rdb), "fresh")
		require.NoError(t, fresh.AddPermits(ctx, 3), "unset counts as 0")
		assert.Equal(t, rsemaphore.State{Set: true, Available: 3, Total: 3}, semState(t, fresh))
		assert.ErrorIs(t, rsemaphore.New(locktest.NewClient(t, rdb), "fresh2").AddPermits(ctx, -1), redcoord.ErrInvalidArgument)
		assert.NotContains(t, locktest.Keys(t, rdb), "rc:{fresh2}:permits")
	})
}

// Acquire and TryAcquire take n permits all at once or none; any handle
// releases them (permits have no owner); State follows.
func TestAcquireRelease(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang guard
		defer cancel()
		rdb := srv.Client(t)
		a := rsemaphore.New(locktest.NewClient(t, rdb), "n")
		b := rsemaphore.New(locktest.NewClient(t, rdb), "n", rsemaphore.WithFair())
		require.NoError(t, a.SetPermits(ctx, 3))

		require.NoError(t, a.Acquire(ctx, 2))
		assert.Equal(t, int64(1), semAvailable(t, b))
		assert.False(t, semTry(t, b, 2), "2 of 1")
		assert.Equal(t, int64(1), semAvailable(t, b), "a failed TryAcquire takes nothing")
		assert.True(t, semTry(t, b, 1))
		assert.False(t, semTry(t, a, 1))
		assert.Equal(t, rsemaphore.State{Set: true, Available: 0, Total: 3}, semState(t, a))

		require.NoError(t, b.Release(ctx, 3), "b releases what a and b took")
		assert.Equal(t, int64(3), semAvailable(t, a))
		require.NoError(t, b.Acquire(ctx, 3), "the whole total")
		require.NoError(t, a.Release(ctx, 1))
		require.NoError(t, a.Release(ctx, 2))
		assert.Equal(t, rsemaphore.State{Set: true, Available: 3, Total: 3}, semState(t, a))
		assert.ElementsMatch(t, []string{"rc:{n}:permits", "rc:{n}:done"}, locktest.Keys(t, rdb))
		assert.Equal(t, "n", a.Name())
	})
}

// An uncontended Acquire and Release cost a round trip each; so does
// TryAcquire, successful or not.
func TestUncontendedRoundTrips(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx := context.Background()
		rdb := srv.Client(t)
		rt := &redistest.RoundTrips{}
		rdb.AddHook(rt)
		c := locktest.NewClient(t, rdb)
		for _, s := range []*rsemaphore.Semaphore{rsemaphore.New(c, "rt"), rsemaphore.New(c, "rt", rsemaphore.WithFair())} {
			require.NoError(t, s.SetPermits(ctx, 2))
			require.NoError(t, s.Acquire(ctx, 1)) // loads the scripts
			require.NoError(t, s.Release(ctx, 1))
			assert.True(t, semTry(t, s, 1))
			assert.False(t, semTry(t, s, 2))
			require.NoError(t, s.Release(ctx, 1))
			rt.Reset()
			for i := 0; i < 10; i++ {
				require.NoError(t, s.Acquire(ctx, 2))
				require.NoError(t, s.Release(ctx, 2))
			}
			assert.Equal(t, int64(20), rt.Load())
			rt.Reset()
			assert.True(t, semTry(t, s, 2))
			assert.False(t, semTry(t, s, 1))
			assert.Equal(t, int64(2), rt.Load())
			require.NoError(t, s.Release(ctx, 2))
		}
	})
}

// SetPermits under what is held makes Available negative: held permits
// stay held, and a waiter waits until enough come back for it.
func TestShrinkBelowHeld(t *testing.T) {
	for _, fair := range []bool{false, true} {
		t.Run(semMode(fair), func(t *testing.T) {
			redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang guard
				defer cancel()
				rdb := srv.Client(t)
				holder := rsemaphore.New(locktest.NewClient(t, rdb), "n")
				wc := locktest.NewClient(t, rdb)
				waiter := rsemaphore.New(wc, "n", semOpts(fair)...)
				require.NoError(t, holder.SetPermits(ctx, 5))
				require.NoError(t, holder.Acquire(ctx, 4))
				require.NoError(t, holder.SetPermits(ctx, 2))
				assert.Equal(t, rsemaphore.State{Set: true, Available: -2, Total: 2}, semState(t, holder))
				assert.False(t, semTry(t, waiter, 1))
				err := waiter.Acquire(ctx, 3)
				assert.ErrorIs(t, err, redcoord.ErrInvalidArgument, "3 of a total of 2")
				assert.ErrorContains(t, err, "total of 2")

				done := semAsync(ctx, waiter, 2)
				semWaiting(t, wc, 1, holder, fair, 1)
				require.NoError(t, holder.Release(ctx, 2))
				assert.Equal(t, int64(0), semAvailable(t, holder), "0 available: the waiter took nothing")
				require.NoError(t, holder.Release(ctx, 1))
				assert.Equal(t, int64(1), semAvailable(t, holder), "1 of the 2 it needs")
				semPending(t, done)
				require.NoError(t, holder.Release(ctx, 1))
				require.NoError(t, semResult(t, done))
				assert.Equal(t, rsemaphore.State{Set: true, Available: 0, Total: 2}, semState(t, holder))
				require.NoError(t, waiter.Release(ctx, 2))
				assert.ErrorIs(t, waiter.Release(ctx, 1), redcoord.ErrNotHeld, "all 2 are back")
			})
		})
	}
}

// AddPermits wakes the waiters the new permits let in, in every process;
// SetPermits does too.
func TestAddPermitsWakesWaiters(t *testing.T) {
	for _, fair := range []bool{false, true} {
		t.Run(semMode(fair), func(t *testing.T) {
			redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang guard
				defer cancel()
				rdb := srv.Client(t)
				admin := rsemaphore.New(locktest.NewClient(t, rdb), "n")
				require.NoError(t, admin.SetPermits(ctx, 3))
				require.NoError(t, admin.Acquire(ctx, 3))
				var waiters []<-chan error
				for i := 0; i < 3; i++ {
					c := locktest.NewClient(t, rdb)
					waiters = append(waiters, semAsync(ctx, rsemaphore.New(c, "n", semOpts(fair)...), 2))
					semWaiting(t, c, 1, admin, fair, i+1)
				}
				require.NoError(t, admin.AddPermits(ctx, 4)) // 4 available: two waiters of 2
				var pending []<-chan error
				locktest.Eventually(t, func() bool {
					pending = pending[:0]
					for i, w := range waiters {
						select {
						case err := <-w:
							require.NoError(t, err)
							waiters[i] = nil // a nil channel: never ready again
						default:
							if w != nil {
								pending = append(pending, w)
							}
						}
					}
					return len(pending) == 1
				}, "two waiters woken")
				assert.Equal(t, rsemaphore.State{Set: true, Available: 0, Total: 7, Waiting: semIfFair(fair, 1)}, semState(t, admin))
				semPending(t, pending[0])
				require.NoError(t, admin.SetPermits(ctx, 9)) // 2 more
				require.NoError(t, semResult(t, pending[0]), "the third waiter")
				assert.Equal(t, rsemaphore.State{Set: true, Available: 0, Total: 9}, semState(t, admin))
				require.NoError(t, admin.Release(ctx, 9))
				assert.Equal(t, rsemaphore.State{Set: true, Available: 9, Total: 9}, semState(t, admin))
			})
		})
	}
}

// Drain takes every available permit, ahead of a fair queue, and returns 0
// when there is none; Release gives them back.
func TestDrain(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang guard
		defer cancel()
		rdb := srv.Client(t)
		s := rsemaphore.New(locktest.NewClient(t, rdb), "n")
		require.NoError(t, s.SetPermits(ctx, 5))
		require.NoError(t, s.Acquire(ctx, 1))
		fc := locktest.NewClient(t, rdb)
		fair := rsemaphore.New(fc, "n", rsemaphore.WithFair())
		done := semAsync(ctx, fair, 5)
		semWaiting(t, fc, 1, s, true, 1)

		n, err := s.Drain(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(4), n, "ahead of the queue")
		assert.Equal(t, rsemaphore.State{Set: true, Available: 0, Total: 5, Waiting: 1}, semState(t, s))
		n, err = s.Drain(ctx)
		require.NoError(t, err)
		assert.Zero(t, n)

		require.NoError(t, s.Release(ctx, 4))
		semPending(t, done)
		require.NoError(t, s.Release(ctx, 1))
		require.NoError(t, semResult(t, done), "the queued waiter gets all 5")

		// (A shrink under a waiting request would end its wait: there is none now.)
		require.NoError(t, s.SetPermits(ctx, 3)) // -2 available
		n, err = s.Drain(ctx)
		require.NoError(t, err)
		assert.Zero(t, n, "nothing to drain below 0")
		assert.Equal(t, int64(-2), semAvailable(t, s))
		require.NoError(t, s.SetPermits(ctx, 5))
		require.NoError(t, fair.Release(ctx, 5))
		assert.Equal(t, rsemaphore.State{Set: true, Available: 5, Total: 5}, semState(t, s))
	})
}

// go-redis re-sends a command whose reply was lost with its connection,
// though Redis ran it. Lost replies on Acquire, TryAcquire, Release, and on
// the try that queues a fair waiter: each is applied once.
func TestRetriedRequestsApplyOnce(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a hang guard
		defer cancel()
		faults := redistest.NewFaults()
		rdb := srv.Client(t, func(o *redis.Options) {
			o.Dialer = faults.Dialer(nil)
			o.MinRetryBackoff, o.MaxRetryBackoff = time.Millisecond, 2*time.Millisecond
		})
		c := locktest.NewClient(t, rdb)
		s := rsemaphore.New(c, "retry")
		fair := rsemaphore.New(c, "retry", rsemaphore.WithFair())
		other := rsemaphore.New(locktest.NewClient(t, srv.Client(t)), "retry")
		require.NoError(t, other.SetPermits(ctx, 5))
		const rounds = 20 // 4 injected faults each
		for i := 0; i < rounds; i++ {
			faults.DropReply(locktest.EvalSHA("sem_acquire"))
			require.NoError(t, s.Acquire(ctx, 2), "round %d", i)
			require.Equal(t, int64(3), semAvailable(t, other), "acquire applied twice, round %d", i)

			faults.DropReply(locktest.EvalSHA("sem_acquire"))
			require.True(t, semTry(t, s, 1), "round %d", i)
			require.Equal(t, int64(2), semAvailable(t, other), "TryAcquire applied twice, round %d", i)

			faults.DropReply(locktest.EvalSHA("sem_release"))
			require.NoError(t, s.Release(ctx, 3), "a retried release must not report ErrNotHeld, round %d", i)
			require.Equal(t, int64(5), semAvailable(t, other), "release applied twice, round %d", i)

			// fair queues behind other; the reply of the try that queues it is lost.
			require.NoError(t, other.Acquire(ctx, 4))
			faults.DropReply(locktest.EvalSHA("sem_acquire"))
			done := semAsync(ctx, fair, 3)
			semWaiting(t, c, 1, other, true, 1)
			require.NoError(t, other.Release(ctx, 4))
			require.NoError(t, semResult(t, done))
			require.Equal(t, rsemaphore.State{Set: true, Available: 2, Total: 5}, semState(t, other), "queued or granted twice, round %d", i)
			require.NoError(t, fair.Release(ctx, 3))
		}
		assert.Equal(t, 4*rounds, faults.Fired(), "every injected fault fired")
		assert.Equal(t, rsemaphore.State{Set: true, Available: 5, Total: 5}, semState(t, other))
	})
}
