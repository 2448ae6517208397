package rsemaphore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rsemaphore"
)

// Acquire calls of 1 to 3 permits ended by their contexts at random moments
// (before the first try, while waiting, as a grant or a wake races in),
// while a blocker holds 3 of 5 permits and the waiters that do get in
// release at once: afterwards every permit is back, nobody is queued, no
// key but the permits' and the request markers is left, and no Hub or
// server has a subscription. goleak (TestMain) finds no goroutine left.
func TestCancelledWaitsLeaveCountUnchanged(t *testing.T) {
	const (
		procs   = 4
		workers = 16
		permits = 5
	)
	for _, fair := range []bool{false, true} {
		t.Run(semMode(fair), func(t *testing.T) {
			redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
				const cancelled = 400
				longest := 10 * time.Millisecond
				if !srv.Real {
					longest = 30 * time.Millisecond // Lua runs slower: let some waits last
				}
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a hang guard
				defer cancel()
				rdb := srv.Client(t)
				calls := newSemCalls()
				clients := make([]*redcoord.Client, procs)
				for i := range clients {
					crdb := srv.Client(t)
					crdb.AddHook(calls)
					clients[i] = locktest.NewClient(t, crdb)
				}
				blocker := rsemaphore.New(clients[0], "cancel")
				require.NoError(t, blocker.SetPermits(ctx, permits))
				require.NoError(t, blocker.Acquire(ctx, 3))

				var (
					gaveUp, got atomic.Int32
					wg          sync.WaitGroup
				)
				errs := make(chan error, workers)
				for w := 0; w < workers; w++ {
					s := rsemaphore.New(clients[w%procs], "cancel", semOpts(fair)...)
					wg.Add(1)
					go func() {
						defer wg.Done()
						rng := rand.New(rand.NewPCG(uint64(w), 3))
						for k := 0; k < 10*cancelled && gaveUp.Load() < cancelled; k++ {
							n := 1 + rng.Int64N(3)
							wctx, wcancel := context.WithTimeout(ctx, time.Duration(rng.Int64N(int64(longest))))
							if rng.IntN(4) == 0 {
								wcancel() // before the first try
							}
							err := s.Acquire(wctx, n)
							wcancel()
							switch {
							case err == nil:
								got.Add(1)
								if err := s.Release(ctx, n); err != nil {
									errs <- err
									return
								}
							case errors.Is(err, redcoord.ErrNotAcquired) &&
								(errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
								gaveUp.Add(1)
							default:
								errs <- fmt.Errorf("acquire %d: %w", n, err)
								return
							}
						}
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					require.NoError(t, err)
				}
				t.Logf("%d waits ended by their contexts, %d acquired; %d leaves gave permits back",
					gaveUp.Load(), got.Load(), calls.countOnes("sem_leave"))
				require.GreaterOrEqual(t, gaveUp.Load(), int32(cancelled))
				assert.Greater(t, got.Load(), int32(0), "nobody got in: the waits raced nothing")
				if fair {
					assert.Greater(t, calls.countOnes("sem_leave"), 0, "no grant raced a cancel")
				}

				assert.Equal(t, rsemaphore.State{Set: true, Available: permits - 3, Total: permits}, semState(t, blocker),
					"the blocker's 3 held, nothing else")
				require.NoError(t, blocker.Release(ctx, 3))
				assert.Equal(t, rsemaphore.State{Set: true, Available: permits, Total: permits}, semState(t, blocker))
				assert.Subset(t, []string{"rc:{cancel}:permits", "rc:{cancel}:done"}, locktest.Keys(t, rdb), "no queue left")
				for _, c := range clients {
					hub, err := c.Hub()
					require.NoError(t, err)
					locktest.Eventually(t, func() bool { st := hub.Stats(); return st.Waiters == 0 && st.Channels == 0 }, "Hub empty")
				}
				locktest.Eventually(t, func() bool { return len(rdb.PubSubChannels(ctx, "rc:{*").Val()) == 0 }, "PUBSUB CHANNELS empty")
				fresh := rsemaphore.New(clients[1], "cancel", semOpts(fair)...)
				assert.True(t, semTry(t, fresh, permits), "every permit free, nobody queued")
				require.NoError(t, fresh.Release(ctx, permits))
			})
		})
	}
}

// A fair waiter granted permits whose grant message is lost (its
// subscriber connection blackholed), and whose context ends before its next
// check, gives the permits back, and they go on to the next waiter.
func TestCancelAfterUnseenGrant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m, opts := redistest.Bubble()
		defer m.Close()
		faults := redistest.NewFaults()
		wopts := *opts
		wopts.Dialer = faults.Dialer(opts.Dialer)
		hrdb, wrdb := redis.NewClient(opts), redis.NewClient(&wopts)
		defer hrdb.Close()
		defer wrdb.Close()
		hc, err := redcoord.New(hrdb)
		require.NoError(t, err)
		defer hc.Close(ctx)
		wc, err := redcoord.New(wrdb)
		require.NoError(t, err)
		defer wc.Close(ctx)

		holder := rsemaphore.New(hc, "n")
		require.NoError(t, holder.SetPermits(ctx, 3))
		require.NoError(t, holder.Acquire(ctx, 3))
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		first := semAsync(wctx, rsemaphore.New(wc, "n", rsemaphore.WithFair()), 3)
		synctest.Wait()
		next := rsemaphore.New(hc, "n", rsemaphore.WithFair())
		nextDone := semAsync(ctx, next, 2)
		synctest.Wait()
		require.Equal(t, int64(2), semState(t, holder).Waiting)

		faults.Blackhole()
		require.NoError(t, holder.Release(ctx, 3))
		synctest.Wait()
		assert.Equal(t, rsemaphore.State{Set: true, Available: 0, Total: 3, Waiting: 1}, semState(t, holder),
			"granted to the first waiter")
		semPending(t, first)

		cancel() // before its poll timer finds the grant
		err = <-first
		assert.ErrorIs(t, err, redcoord.ErrNotAcquired)
		assert.ErrorIs(t, err, context.Canceled)
		require.NoError(t, <-nextDone, "the permits given back went on to the next waiter")
		assert.Equal(t, rsemaphore.State{Set: true, Available: 1, Total: 3}, semState(t, holder))
		require.NoError(t, next.Release(ctx, 2))
		assert.Equal(t, int64(3), semAvailable(t, holder))
		faults.Unblackhole()
	})
}

// An Acquire whose try took the permits but whose reply was lost, and whose
// context ends while go-redis waits to retry, gives the permits back: the
// caller never learnt it had them.
func TestCancelAfterLostReply(t *testing.T) {
	for _, fair := range []bool{false, true} {
		t.Run(semMode(fair), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				m, opts := redistest.Bubble()
				defer m.Close()
				faults := redistest.NewFaults()
				o := *opts
				o.Dialer = faults.Dialer(opts.Dialer)
				o.MinRetryBackoff, o.MaxRetryBackoff = time.Second, time.Second
				rdb := redis.NewClient(&o)
				defer rdb.Close()
				c, err := redcoord.New(rdb)
				require.NoError(t, err)
				defer c.Close(ctx)

				s := rsemaphore.New(c, "n", semOpts(fair)...)
				require.NoError(t, s.SetPermits(ctx, 5))
				require.NoError(t, s.Acquire(ctx, 1)) // loads the scripts
				require.NoError(t, s.Release(ctx, 1))

				faults.DropReply(locktest.EvalSHA("sem_acquire"))
				wctx, cancel := context.WithCancel(ctx)
				done := semAsync(wctx, s, 2)
				synctest.Wait() // go-redis sleeps before its retry
				require.Equal(t, 1, faults.Fired())
				assert.Equal(t, int64(3), semAvailable(t, s), "the lost try took 2")
				cancel()
				err = <-done
				assert.ErrorIs(t, err, redcoord.ErrNotAcquired)
				assert.ErrorIs(t, err, context.Canceled)
				assert.Equal(t, rsemaphore.State{Set: true, Available: 5, Total: 5}, semState(t, s), "given back")
			})
		})
	}
}

// Closing the Client ends its waits, fair and unfair, with ErrClosed and
// ErrNotAcquired; their queue entries go with them, and what the next
// waiter needs is granted to it.
func TestCloseEndsWaits(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang guard
		defer cancel()
		rdb := srv.Client(t)
		hc := locktest.NewClient(t, rdb)
		holder := rsemaphore.New(hc, "n")
		require.NoError(t, holder.SetPermits(ctx, 4))
		require.NoError(t, holder.Acquire(ctx, 3)) // 1 free

		// the unfair waiter waits on another name: one name has one kind
		other := rsemaphore.New(hc, "m")
		require.NoError(t, other.SetPermits(ctx, 1))
		require.NoError(t, other.Acquire(ctx, 1))

		closing, err := redcoord.New(rdb)
		require.NoError(t, err)
		waits := []<-chan error{
			semAsync(ctx, rsemaphore.New(closing, "n", rsemaphore.WithFair()), 3),
			semAsync(ctx, rsemaphore.New(closing, "m"), 1),
		}
		semWaiting(t, closing, 2, holder, true, 1)
		next := rsemaphore.New(hc, "n", rsemaphore.WithFair())
		nextDone := semAsync(ctx, next, 1)
		semWaiting(t, hc, 1, holder, true, 2)

		require.NoError(t, closing.Close(ctx))
		for _, ch := range waits {
			err := semResult(t, ch)
			assert.ErrorIs(t, err, redcoord.ErrClosed)
			assert.ErrorIs(t, err, redcoord.ErrNotAcquired)
		}
		require.NoError(t, semResult(t, nextDone), "the free permit goes to the next in the queue")
		assert.Equal(t, rsemaphore.State{Set: true, Available: 0, Total: 4}, semState(t, holder))
		require.NoError(t, holder.Release(ctx, 3))
		require.NoError(t, next.Release(ctx, 1))
		assert.Equal(t, rsemaphore.State{Set: true, Available: 4, Total: 4}, semState(t, holder))
		require.NoError(t, other.Release(ctx, 1))
		assert.Subset(t, []string{"rc:{n}:permits", "rc:{n}:done", "rc:{m}:permits", "rc:{m}:done"}, locktest.Keys(t, rdb), "no queue left")
	})
}
