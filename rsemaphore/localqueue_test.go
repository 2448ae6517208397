package rsemaphore_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rsemaphore"
)

// semWaitsOn starts an Acquire of n permits by a new handle of c on "n"
// with ctx, and returns a channel that gets its error; on success it
// sends i on order and releases the permits at once.
func semWaitsOn(ctx context.Context, t *testing.T, c *redcoord.Client, n int64, order chan<- int, i int) <-chan error {
	s := rsemaphore.New(c, "n")
	done := make(chan error, 1)
	go func() {
		err := s.Acquire(ctx, n)
		if err == nil {
			order <- i
			assert.NoError(t, s.Release(context.Background(), n))
		}
		done <- err
	}()
	return done
}

// A Client registers once for all its blocked Acquires of a name. A new
// Acquire no smaller than those already waiting queues behind them without
// a round trip (a TryAcquire still tries); a release wakes the Client's
// longest-waiting one that fits, each hand-off at once, in the order the
// Acquires came,
// at two round trips per acquisition (its try and its release). The last
// one takes the registration away.
func TestSemLocalWaitersShareOneRegistration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ps := semProcs(t, 2, nil)
		hp, wp := ps[0], ps[1]
		holder := rsemaphore.New(hp.C, "n")
		require.NoError(t, holder.SetPermits(ctx, 1))
		require.NoError(t, holder.Acquire(ctx, 1))
		const k = 4
		order := make(chan int, k)
		var done [k]<-chan error
		done[0] = semWaitsOn(ctx, t, wp.C, 1, order, 0)
		synctest.Wait()
		require.Equal(t, int64(1), semRegistered(t, hp))
		wp.RT.Reset()
		for i := 1; i < k; i++ {
			done[i] = semWaitsOn(ctx, t, wp.C, 1, order, i)
			synctest.Wait()
		}
		assert.Zero(t, wp.RT.Load(), "an Acquire behind local waiters made a round trip")
		assert.Equal(t, int64(1), semRegistered(t, hp), "one registration per Client and name")
		ok, err := rsemaphore.New(wp.C, "n").TryAcquire(ctx, 1)
		require.NoError(t, err)
		assert.False(t, ok)
		assert.Equal(t, int64(1), wp.RT.Load(), "a TryAcquire tries at once")
		assert.Equal(t, int64(1), semRegistered(t, hp), "a TryAcquire leaves the registration be")

		wp.RT.Reset()
		released := time.Now()
		require.NoError(t, holder.Release(ctx, 1))
		for i := range k {
			require.NoError(t, <-done[i])
			assert.Equal(t, i, <-order, "the local waiters take the permit in the order they came")
		}
		assert.Equal(t, released, time.Now(), "every hand-off at once")
		assert.Equal(t, int64(2*k), wp.RT.Load(), "two round trips per acquisition")
		assert.Zero(t, semRegistered(t, hp), "the last local waiter took the registration away")
	})
}

// A local waiter that gives up with a wake pending passes it to the next
// local waiter that fits, and the Client stays registered; when the last
// local waiter gives up with a wake, the wake goes on to the next
// registered process. Nobody waits for a poll.
func TestSemCancelledLocalWaiterPassesTheWakeOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ps := semProcs(t, 3, nil)
		hp, wp, op := ps[0], ps[1], ps[2]
		holder := rsemaphore.New(hp.C, "n")
		require.NoError(t, holder.SetPermits(ctx, 1))
		require.NoError(t, holder.Acquire(ctx, 1))
		order := make(chan int, 3)
		hctx, cancelHead := context.WithCancel(ctx)
		head := semWaitsOn(hctx, t, wp.C, 1, order, 0)
		synctest.Wait()
		time.Sleep(time.Millisecond) // the other process registers after wp
		other := semWaitsOn(ctx, t, op.C, 1, order, 2)
		synctest.Wait()
		next := semWaitsOn(ctx, t, wp.C, 1, order, 1)
		synctest.Wait()
		require.Equal(t, int64(2), semRegistered(t, hp))

		// The head gives up; its leave's reply is held back, and its
		// subscription stays open meanwhile: the release's wake of wp
		// goes to it, and it passes the wake on as it closes.
		const held = 10 * time.Millisecond
		wp.Faults.DelayReply(locktest.EvalSHA("sem_leave"), held)
		cancelHead()
		synctest.Wait()
		start := time.Now()
		require.NoError(t, holder.Release(ctx, 1)) // wakes wp's head
		require.ErrorIs(t, <-head, context.Canceled)
		require.Equal(t, 1, wp.Faults.Delayed())
		require.NoError(t, <-next)
		require.NoError(t, <-other)
		assert.Equal(t, []int{1, 2}, []int{<-order, <-order}, "the next local waiter got the wake, then the other process")
		assert.LessOrEqual(t, time.Since(start), held, "no hand-off waited for a poll")
		assert.Zero(t, semRegistered(t, hp))

		// The last local waiter gives up its wake: it goes to the next process.
		require.NoError(t, holder.Acquire(ctx, 1))
		lctx, cancelLast := context.WithCancel(ctx)
		last := semWaitsOn(lctx, t, wp.C, 1, order, 0)
		synctest.Wait()
		time.Sleep(time.Millisecond)
		other = semWaitsOn(ctx, t, op.C, 1, order, 2)
		synctest.Wait()
		start = time.Now()
		require.NoError(t, holder.Release(ctx, 1))
		cancelLast()
		_ = semGaveUp(t, <-last, order)
		require.NoError(t, <-other)
		assert.Equal(t, 2, <-order)
		assert.Equal(t, start, time.Now(), "the wake went on to the other process at once")
		assert.Zero(t, semRegistered(t, hp))
	})
}

// semGaveUp checks how a waiter cancelled just after the release that woke
// it ended: given up (its wake went on), or, when its try ran before the
// cancel reached it, with the permit, which it then released at once to
// the next waiter, as a wake passed on would have. It reports whether the
// waiter took the permit.
func semGaveUp(t *testing.T, err error, order <-chan int) (took bool) {
	t.Helper()
	if err == nil {
		require.Equal(t, 0, <-order)
		t.Log("the cancelled waiter's try took the permit before the cancel reached it")
		return true
	}
	require.ErrorIs(t, err, context.Canceled)
	return false
}

// The heartbeat keeps a Client's one registration alive while any of its
// blocked Acquires remains, however long they wait; a Client that dies
// with blocked Acquires leaves that one registration, dropped at its
// deadline.
func TestSemClientRegistrationLivesWithItsWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ps := semProcs(t, 2, nil)
		hp, wp := ps[0], ps[1]
		holder := rsemaphore.New(hp.C, "n")
		require.NoError(t, holder.SetPermits(ctx, 1))
		require.NoError(t, holder.Acquire(ctx, 1))
		order := make(chan int, 3)
		var cancels [3]context.CancelFunc
		var done [3]<-chan error
		for i := range 3 {
			var wctx context.Context
			wctx, cancels[i] = context.WithCancel(ctx)
			done[i] = semWaitsOn(wctx, t, wp.C, 1, order, i)
			synctest.Wait()
		}
		time.Sleep(2*leaseTTL + 10*time.Second)
		assert.Equal(t, int64(1), semRegistered(t, hp), "renewed while the waiters wait")
		cancels[0]()
		require.ErrorIs(t, <-done[0], context.Canceled)
		time.Sleep(2*leaseTTL + 10*time.Second)
		assert.Equal(t, int64(1), semRegistered(t, hp), "renewed while waiters remain")

		wp.Kill() // dies with two blocked Acquires
		for i := 1; i < 3; i++ {
			require.Error(t, <-done[i])
		}
		assert.Equal(t, int64(1), semRegistered(t, hp), "a dead Client leaves one registration")
		time.Sleep(leaseTTL) // its deadline: a lease TTL after its last renewal
		assert.Zero(t, semRegistered(t, hp), "the dead Client's registration was dropped at its deadline")
		assert.Zero(t, hp.RDB.ZCard(ctx, "rc:{n}:sem-sizes").Val(), "and its size with it")
		require.NoError(t, holder.Release(ctx, 1))
		for i := range cancels {
			cancels[i]()
		}
	})
}
