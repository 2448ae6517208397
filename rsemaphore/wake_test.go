package rsemaphore_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rsemaphore"
)

// These tests run in a synctest bubble on a miniredis whose clock is the
// bubble's: no poll timer fires unless the test sleeps, so every try they
// count was made by a wake from the Hub.

// semBubble runs f in a bubble with two processes on one miniredis: one for
// the holder and one for the waiters, whose semaphore scripts calls counts.
func semBubble(t *testing.T, f func(t *testing.T, holder, waiters *redcoord.Client, calls *semCalls)) {
	synctest.Test(t, func(t *testing.T) {
		m, opts := redistest.Bubble()
		defer m.Close()
		hrdb, wrdb := redis.NewClient(opts), redis.NewClient(opts)
		defer hrdb.Close()
		defer wrdb.Close()
		calls := newSemCalls()
		wrdb.AddHook(calls)
		hc, err := redcoord.New(hrdb)
		require.NoError(t, err)
		defer hc.Close(context.Background())
		wc, err := redcoord.New(wrdb)
		require.NoError(t, err)
		defer wc.Close(context.Background())
		f(t, hc, wc, calls)
	})
}

// semWaiter is one Acquire started in a bubble.
type semWaiter struct {
	cancel context.CancelFunc // nil: not cancellable
	done   chan error
}

// semStartWaiters starts one Acquire of each size, in order, each on its own
// handle on c, and lets each subscribe before the next starts: the Hub's
// longest-waiting order is theirs.
func semStartWaiters(c *redcoord.Client, name string, sizes ...int64) []*semWaiter {
	var ws []*semWaiter
	for _, n := range sizes {
		ctx, cancel := context.WithCancel(context.Background())
		w := &semWaiter{cancel: cancel, done: make(chan error, 1)}
		s := rsemaphore.New(c, name)
		go func() { w.done <- s.Acquire(ctx, n) }()
		synctest.Wait()
		ws = append(ws, w)
	}
	return ws
}

// semReturned lists the waiters whose Acquire has returned so far, by index,
// failing the test for one that returned an error.
func semReturned(t *testing.T, ws []*semWaiter, seen map[int]bool) []int {
	t.Helper()
	var out []int
	for i, w := range ws {
		if seen[i] {
			out = append(out, i)
			continue
		}
		select {
		case err := <-w.done:
			require.NoError(t, err, "waiter %d", i)
			seen[i] = true
			out = append(out, i)
		default:
		}
	}
	return out
}

// A release wakes as many registered waiters as its permits fit: with 20
// waiters of 1 in one Client, a release of 1 costs exactly one try, and a
// release of 5 costs five. Which waiters go is the registry's order (the
// earliest heartbeat deadline first); in the bubble all deadlines are equal.
func TestReleaseWakesAsManyAsFit(t *testing.T) {
	semBubble(t, func(t *testing.T, hc, wc *redcoord.Client, calls *semCalls) {
		ctx := context.Background()
		holder := rsemaphore.New(hc, "n")
		require.NoError(t, holder.SetPermits(ctx, 10))
		n, err := holder.Drain(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(10), n)
		sizes := make([]int64, 20)
		for i := range sizes {
			sizes[i] = 1
		}
		ws := semStartWaiters(wc, "n", sizes...)
		require.Equal(t, 20, semHubWaiters(t, wc))
		seen := map[int]bool{}

		calls.reset()
		require.NoError(t, holder.Release(ctx, 1))
		synctest.Wait()
		assert.Equal(t, 1, calls.count("sem_acquire"), "tries after a release of 1")
		assert.Len(t, semReturned(t, ws, seen), 1)

		calls.reset()
		require.NoError(t, holder.Release(ctx, 5))
		synctest.Wait()
		assert.Equal(t, 5, calls.count("sem_acquire"), "tries after a release of 5")
		assert.Len(t, semReturned(t, ws, seen), 6)
		assert.Equal(t, int64(0), semAvailable(t, holder))

		calls.reset()
		require.NoError(t, holder.AddPermits(ctx, 2))
		synctest.Wait()
		assert.Equal(t, 2, calls.count("sem_acquire"), "tries after 2 permits were added")
		assert.Len(t, semReturned(t, ws, seen), 8)
		assert.Equal(t, 12, semHubWaiters(t, wc))

		for i, w := range ws {
			if !seen[i] {
				w.cancel()
			}
		}
		synctest.Wait()
		for i, w := range ws {
			if !seen[i] {
				assert.ErrorIs(t, <-w.done, context.Canceled)
			}
		}
		assert.Zero(t, semHubWaiters(t, wc))
		assert.Equal(t, rsemaphore.State{Set: true, Available: 0, Total: 12}, semState(t, holder))
	})
}

// A waiter of 3 is not woken by a release of 1, but a waiter of 1 behind it
// is; a release that makes 3 available wakes the waiter of 3.
func TestReleaseSkipsWaitersTooLarge(t *testing.T) {
	semBubble(t, func(t *testing.T, hc, wc *redcoord.Client, calls *semCalls) {
		ctx := context.Background()
		holder := rsemaphore.New(hc, "n")
		require.NoError(t, holder.SetPermits(ctx, 4))
		require.NoError(t, holder.Acquire(ctx, 4))
		ws := semStartWaiters(wc, "n", 3, 1)
		seen := map[int]bool{}

		calls.reset()
		require.NoError(t, holder.Release(ctx, 1))
		synctest.Wait()
		assert.Equal(t, 1, calls.count("sem_acquire"), "tries after a release of 1")
		assert.Equal(t, []int{1}, semReturned(t, ws, seen), "the waiter of 1 behind the waiter of 3")

		calls.reset()
		require.NoError(t, holder.Release(ctx, 2))
		synctest.Wait()
		assert.Zero(t, calls.count("sem_acquire"), "2 available wake no waiter of 3")
		assert.Equal(t, []int{1}, semReturned(t, ws, seen))

		require.NoError(t, holder.Release(ctx, 1))
		synctest.Wait()
		assert.Equal(t, 1, calls.count("sem_acquire"))
		assert.Equal(t, []int{0, 1}, semReturned(t, ws, seen))
		assert.Equal(t, int64(0), semAvailable(t, holder))
		assert.Zero(t, semHubWaiters(t, wc))
	})
}

// A wake that never arrives (the waiters' subscriber connection is
// blackholed) costs a waiter at most one poll interval.
func TestLostWakeCostsOnePollInterval(t *testing.T) {
	for _, fair := range []bool{false, true} {
		t.Run(semMode(fair), func(t *testing.T) {
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
				const poll = 2 * time.Second
				hc, err := redcoord.New(hrdb)
				require.NoError(t, err)
				defer hc.Close(ctx)
				wc, err := redcoord.New(wrdb, redcoord.WithMaxPollInterval(poll))
				require.NoError(t, err)
				defer wc.Close(ctx)

				holder, waiter := rsemaphore.New(hc, "n"), rsemaphore.New(wc, "n", semOpts(fair)...)
				require.NoError(t, holder.SetPermits(ctx, 2))
				require.NoError(t, holder.Acquire(ctx, 2))
				done := make(chan time.Time, 1)
				go func() {
					assert.NoError(t, waiter.Acquire(ctx, 2))
					done <- time.Now()
				}()
				synctest.Wait()
				require.Equal(t, 1, semHubWaiters(t, wc))
				faults.Blackhole()
				time.Sleep(poll / 4)
				released := time.Now()
				require.NoError(t, holder.Release(ctx, 2))
				gap := (<-done).Sub(released)
				t.Logf("acquired %v after the release (poll interval %v)", gap, poll)
				assert.Greater(t, gap, time.Duration(0), "the wake was not lost: the test proves nothing")
				assert.LessOrEqual(t, gap, poll)
				require.NoError(t, waiter.Release(ctx, 2))
				faults.Unblackhole()
			})
		})
	}
}

// A waiter whose request a shrink put beyond the total (it could never be
// served) gets ErrInvalidArgument at once: a shrink wakes every waiter. In
// the fair queue it no longer holds up the waiters behind it, which are
// served at once.
func TestShrinkBelowWaitingRequest(t *testing.T) {
	for _, fair := range []bool{false, true} {
		t.Run(semMode(fair), func(t *testing.T) {
			semBubble(t, func(t *testing.T, hc, wc *redcoord.Client, calls *semCalls) {
				ctx := context.Background()
				holder := rsemaphore.New(hc, "n")
				require.NoError(t, holder.SetPermits(ctx, 5))
				require.NoError(t, holder.Acquire(ctx, 4))
				type result struct {
					err error
					at  time.Time
				}
				big, small := make(chan result, 1), make(chan result, 1)
				acquire := func(n int64, ch chan result) {
					s := rsemaphore.New(wc, "n", semOpts(fair)...)
					go func() {
						err := s.Acquire(ctx, n)
						ch <- result{err, time.Now()}
					}()
					synctest.Wait()
				}
				acquire(3, big)
				if fair {
					acquire(1, small)
				}
				shrunk := time.Now()
				require.NoError(t, holder.SetPermits(ctx, 2)) // -2 available
				require.NoError(t, holder.Release(ctx, 3))    // 1
				synctest.Wait()
				if fair {
					select {
					case r := <-small:
						require.NoError(t, r.err)
					default:
						t.Fatal("the waiter behind a request beyond the total was not served")
					}
				}
				r := <-big
				assert.ErrorIs(t, r.err, redcoord.ErrInvalidArgument)
				assert.ErrorContains(t, r.err, "total of 2")
				delay := r.at.Sub(shrunk)
				t.Logf("the waiter of 3 learnt it after %v", delay)
				assert.Zero(t, delay, "the shrink's message woke it")
				assert.Equal(t, rsemaphore.State{Set: true, Available: 1 - semIfFair(fair, 1), Total: 2}, semState(t, holder))
			})
		})
	}
}
