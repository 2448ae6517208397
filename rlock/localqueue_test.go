package rlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/rlock"
)

// waitsOn starts a Lock of a new handle of p's Client on "n" with ctx, and
// returns a channel that gets its error and then the bubble time it
// returned at; the lock it takes is released at once.
func waitsOn(ctx context.Context, t *testing.T, c *redcoord.Client, order chan<- int, i int) <-chan error {
	m := rlock.New(c, "n")
	done := make(chan error, 1)
	go func() {
		err := m.Lock(ctx)
		if err == nil {
			order <- i
			assert.NoError(t, m.Unlock(context.Background()))
		}
		done <- err
	}()
	return done
}

// A Client registers once for all its waiters of a name. A new Lock where
// its waiters already wait queues behind them without a round trip (a
// TryLock still tries); a release wakes the longest-waiting one, and each
// hand-off is immediate, in the order the Locks came, at two round trips
// per acquisition (its try and its release). The last one takes the
// registration away.
func TestLocalWaitersQueueBehindOneRegistration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ps := procs(t, 2, nil)
		hp, wp := ps[0], ps[1]
		holder := rlock.New(hp.C, "n")
		require.NoError(t, holder.Lock(ctx))
		const n = 4
		order := make(chan int, n)
		var done [n]<-chan error
		done[0] = waitsOn(ctx, t, wp.C, order, 0)
		synctest.Wait()
		require.Equal(t, int64(1), registered(t, hp))
		wp.RT.Reset()
		for i := 1; i < n; i++ {
			done[i] = waitsOn(ctx, t, wp.C, order, i)
			synctest.Wait()
		}
		assert.Zero(t, wp.RT.Load(), "a Lock behind local waiters made a round trip")
		assert.Equal(t, int64(1), registered(t, hp), "one registration per Client and name")
		ok, err := rlock.New(wp.C, "n").TryLock(ctx)
		require.NoError(t, err)
		assert.False(t, ok)
		assert.Equal(t, int64(1), wp.RT.Load(), "a TryLock tries at once")
		assert.Equal(t, int64(1), registered(t, hp), "a TryLock leaves the registration be")

		wp.RT.Reset()
		released := time.Now()
		require.NoError(t, holder.Unlock(ctx))
		for i := range n {
			require.NoError(t, <-done[i])
			assert.Equal(t, i, <-order, "the local waiters take the lock in the order they came")
		}
		assert.Equal(t, released, time.Now(), "every hand-off at once")
		assert.Equal(t, int64(2*n), wp.RT.Load(), "two round trips per acquisition")
		assert.Zero(t, registered(t, hp), "the last local waiter took the registration away")
	})
}

// A local waiter that gives up with a wake pending passes it to the next
// local waiter, and the Client stays registered; when the last local
// waiter gives up with a wake, the wake goes on to the next registered
// process. Nobody waits for a poll.
func TestCancelledLocalWaiterPassesTheWakeOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ps := procs(t, 3, nil)
		hp, wp, op := ps[0], ps[1], ps[2]
		holder := rlock.New(hp.C, "n")
		require.NoError(t, holder.Lock(ctx))
		order := make(chan int, 3)
		hctx, cancelHead := context.WithCancel(ctx)
		head := waitsOn(hctx, t, wp.C, order, 0)
		synctest.Wait()
		time.Sleep(time.Millisecond) // the other process registers after wp
		other := waitsOn(ctx, t, op.C, order, 2)
		synctest.Wait()
		next := waitsOn(ctx, t, wp.C, order, 1)
		synctest.Wait()
		require.Equal(t, int64(2), registered(t, hp))

		start := time.Now()
		require.NoError(t, holder.Unlock(ctx)) // wakes wp's head
		cancelHead()
		won := gaveUp(t, <-head, order)
		require.NoError(t, <-next)
		require.NoError(t, <-other)
		if got := []int{<-order, <-order}; won {
			// The head's own release woke one of the two registered Clients.
			assert.ElementsMatch(t, []int{1, 2}, got)
		} else {
			assert.Equal(t, []int{1, 2}, got, "the next local waiter got the wake, then the other process")
		}
		assert.Equal(t, start, time.Now(), "no hand-off waited for a poll")
		assert.Zero(t, registered(t, hp))

		// The last local waiter gives up its wake: it goes to the next process.
		require.NoError(t, holder.Lock(ctx))
		lctx, cancelLast := context.WithCancel(ctx)
		last := waitsOn(lctx, t, wp.C, order, 0)
		synctest.Wait()
		time.Sleep(time.Millisecond)
		other = waitsOn(ctx, t, op.C, order, 2)
		synctest.Wait()
		start = time.Now()
		require.NoError(t, holder.Unlock(ctx))
		cancelLast()
		_ = gaveUp(t, <-last, order)
		require.NoError(t, <-other)
		assert.Equal(t, 2, <-order)
		assert.Equal(t, start, time.Now(), "the wake went on to the other process at once")
		assert.Zero(t, registered(t, hp))
	})
}

// gaveUp checks how a waiter cancelled just after the release that woke it
// ended: given up (its wake went on), or, when its try ran before the
// cancel reached it, holding the lock, which it then released at once to
// the next waiter, as a wake passed on would have. It reports whether the
// waiter took the lock.
func gaveUp(t *testing.T, err error, order <-chan int) (took bool) {
	t.Helper()
	if err == nil {
		require.Equal(t, 0, <-order)
		t.Log("the cancelled waiter's try took the lock before the cancel reached it")
		return true
	}
	require.ErrorIs(t, err, context.Canceled)
	return false
}

// The heartbeat keeps a Client's one registration alive while any of its
// local waiters remains, however long they wait; a Client that dies with
// local waiters leaves that one registration, dropped at its deadline.
func TestClientRegistrationLivesWithItsWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ps := procs(t, 2, nil)
		hp, wp := ps[0], ps[1]
		holder := rlock.New(hp.C, "n")
		require.NoError(t, holder.Lock(ctx))
		order := make(chan int, 3)
		var cancels [3]context.CancelFunc
		var done [3]<-chan error
		for i := range 3 {
			var wctx context.Context
			wctx, cancels[i] = context.WithCancel(ctx)
			done[i] = waitsOn(wctx, t, wp.C, order, i)
			synctest.Wait()
		}
		time.Sleep(70 * time.Second) // two lease TTLs
		assert.Equal(t, int64(1), registered(t, hp), "renewed while the waiters wait")
		cancels[0]()
		require.ErrorIs(t, <-done[0], context.Canceled)
		time.Sleep(70 * time.Second)
		assert.Equal(t, int64(1), registered(t, hp), "renewed while waiters remain")

		wp.Kill() // dies with two local waiters
		for i := 1; i < 3; i++ {
			require.Error(t, <-done[i])
		}
		assert.Equal(t, int64(1), registered(t, hp), "a dead Client leaves one registration")
		time.Sleep(30 * time.Second) // its deadline: a lease TTL after its last renewal
		assert.Zero(t, registered(t, hp), "the dead Client's registration was dropped at its deadline")
		require.NoError(t, holder.Unlock(ctx))
		for i := range cancels {
			cancels[i]()
		}
	})
}
