package rsemaphore_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/rsemaphore"
)

// leaseTTL is the Clients' lease TTL (the default).
const leaseTTL = 30 * time.Second

// After a process with k blocked acquires dies, each of the next k releases
// wakes a live waiter, not the dead process's registration: no live waiter
// waits for its poll timer. The dead process stopped renewing its
// registrations more than half a lease TTL ago, so they are stale, though
// still before their deadline.
func TestReleaseWakesLiveBeforeDead(t *testing.T) {
	for _, expirable := range []bool{false, true} {
		name := "Semaphore"
		if expirable {
			name = "ExpirableSemaphore"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const k = 5
				ps := semProcs(t, 3, nil)
				hc, lc := ps[0].C, ps[1].C
				ctx := context.Background()
				var release func()
				acquire := func(c *redcoord.Client) func(context.Context) error {
					s := rsemaphore.New(c, "n")
					return func(ctx context.Context) error { return s.Acquire(ctx, 1) }
				}
				if expirable {
					holder := rsemaphore.NewExpirable(hc, "n")
					require.NoError(t, holder.SetPermits(ctx, k))
					var held []rsemaphore.Permit
					for range k {
						p, err := holder.Acquire(ctx, rsemaphore.AcquireOptions{})
						require.NoError(t, err)
						held = append(held, p)
					}
					release = func() { require.NoError(t, holder.Release(ctx, held[0])); held = held[1:] }
					acquire = func(c *redcoord.Client) func(context.Context) error {
						s := rsemaphore.NewExpirable(c, "n")
						return func(ctx context.Context) error {
							_, err := s.Acquire(ctx, rsemaphore.AcquireOptions{})
							return err
						}
					}
				} else {
					holder := rsemaphore.New(hc, "n")
					require.NoError(t, holder.SetPermits(ctx, k))
					require.NoError(t, holder.Acquire(ctx, k))
					release = func() { require.NoError(t, holder.Release(ctx, 1)) }
				}
				registry := semRegistry
				if expirable {
					registry = "rc:{n}:xsem-waiters"
				}
				dead := ps[2]
				for range k {
					a := acquire(dead.C)
					go func() { _ = a(context.Background()) }()
					synctest.Wait()
				}
				// A Client registers once for all its blocked acquires.
				require.Equal(t, int64(1), dead.RDB.ZCard(ctx, registry).Val())
				dead.Kill()
				synctest.Wait()

				done := make(chan error, k)
				for range k {
					a := acquire(lc)
					go func() { done <- a(ctx) }()
					synctest.Wait()
				}
				// The dead registrations age past half a lease TTL; the live
				// ones are renewed every TTL/3 meanwhile.
				time.Sleep(leaseTTL*3/5 + time.Millisecond)
				synctest.Wait()
				require.Equal(t, int64(2), ps[0].RDB.ZCard(ctx, registry).Val())

				for i := range k {
					release()
					synctest.Wait() // no time passes: no poll timer fires
					select {
					case err := <-done:
						require.NoError(t, err)
					default:
						t.Fatalf("release %d woke no live waiter: one waits for its poll timer", i+1)
					}
				}
			})
		})
	}
}

// A release wakes the waiter whose request fits, however many registered
// waiters ahead of it do not fit.
func TestReleaseFindsFittingWaiterBehindManyTooLarge(t *testing.T) {
	semBubble(t, func(t *testing.T, hc, wc *redcoord.Client, calls *semCalls) {
		ctx := context.Background()
		holder := rsemaphore.New(hc, "n")
		require.NoError(t, holder.SetPermits(ctx, 2))
		require.NoError(t, holder.Acquire(ctx, 2))
		sizes := make([]int64, 200)
		for i := range sizes {
			sizes[i] = 2
		}
		large := semStartWaiters(wc, "n", sizes...)
		time.Sleep(time.Millisecond) // the next registers after all of them
		small := semStartWaiters(wc, "n", 1)
		calls.reset()
		require.NoError(t, holder.Release(ctx, 1))
		synctest.Wait()
		assert.Equal(t, 1, calls.count("sem_acquire"), "tries after a release of 1")
		assert.Equal(t, []int{0}, semReturned(t, small, map[int]bool{}), "the waiter of 1 got the permit")
		assert.Empty(t, semReturned(t, large, map[int]bool{}))
		for _, w := range large {
			w.cancel()
		}
		synctest.Wait()
	})
}
