package rrwlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rrwlock"
)

// writersRegistry is the writers' wake registry of the lock "n".
const writersRegistry = "rc:{n}:wwaiters"

// wprocs starts n processes on one miniredis of the bubble.
func wprocs(t *testing.T, n int) []*locktest.Proc {
	m, opts := redistest.Bubble()
	t.Cleanup(m.Close)
	ps := make([]*locktest.Proc, n)
	for i := range ps {
		o := *opts
		ps[i] = locktest.NewProc(t, &o)
		t.Cleanup(ps[i].Kill)
	}
	return ps
}

// wregistered returns how many registrations the writers' registry of "n" has.
func wregistered(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	n, err := rdb.ZCard(context.Background(), writersRegistry).Result()
	require.NoError(t, err)
	return n
}

// writes starts a Lock of a new handle of c on "n" with ctx, and returns a
// channel that gets its error; the write lock it takes is sent i on order,
// then released at once.
func writes(ctx context.Context, t *testing.T, c *redcoord.Client, order chan<- int, i int) <-chan error {
	m := rrwlock.New(c, "n")
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

// A Client registers once for all its waiting writers of a name. A new Lock
// where its writers already wait queues behind them without a round trip (a
// TryLock still tries); a release wakes the longest-waiting one, and each
// hand-off is immediate, in the order the Locks came, at two round trips
// per acquisition (its try and its release). The last one takes
// the registration away.
func TestLocalWritersQueueBehindOneRegistration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ps := wprocs(t, 2)
		hp, wp := ps[0], ps[1]
		holder := rrwlock.New(hp.C, "n")
		require.NoError(t, holder.Lock(ctx))
		const n = 4
		order := make(chan int, n)
		var done [n]<-chan error
		done[0] = writes(ctx, t, wp.C, order, 0)
		synctest.Wait()
		require.Equal(t, int64(1), wregistered(t, hp.RDB))
		wp.RT.Reset()
		for i := 1; i < n; i++ {
			done[i] = writes(ctx, t, wp.C, order, i)
			synctest.Wait()
		}
		assert.Zero(t, wp.RT.Load(), "a Lock behind local writers made a round trip")
		assert.Equal(t, int64(1), wregistered(t, hp.RDB), "one registration per Client and name")
		ok, err := rrwlock.New(wp.C, "n").TryLock(ctx)
		require.NoError(t, err)
		assert.False(t, ok)
		assert.Equal(t, int64(1), wp.RT.Load(), "a TryLock tries at once")
		assert.Equal(t, int64(1), wregistered(t, hp.RDB), "a TryLock leaves the registration be")

		wp.RT.Reset()
		released := time.Now()
		require.NoError(t, holder.Unlock(ctx))
		for i := range n {
			require.NoError(t, <-done[i])
			assert.Equal(t, i, <-order, "the local writers take the lock in the order they came")
		}
		assert.Equal(t, released, time.Now(), "every hand-off at once")
		assert.Equal(t, int64(2*n), wp.RT.Load(), "two round trips per acquisition")
		assert.Zero(t, wregistered(t, hp.RDB), "the last local writer took the registration away")
	})
}

// A local writer that gives up with a wake pending passes it to the next
// local writer; when the last local writer gives up with a wake, the wake
// goes on to the next registered process. Nobody waits for a poll.
func TestCancelledLocalWriterPassesTheWakeOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ps := wprocs(t, 3)
		hp, wp, op := ps[0], ps[1], ps[2]
		holder := rrwlock.New(hp.C, "n")
		require.NoError(t, holder.Lock(ctx))
		order := make(chan int, 3)
		hctx, cancelHead := context.WithCancel(ctx)
		head := writes(hctx, t, wp.C, order, 0)
		synctest.Wait()
		time.Sleep(time.Millisecond) // the other process registers after wp
		other := writes(ctx, t, op.C, order, 2)
		synctest.Wait()
		next := writes(ctx, t, wp.C, order, 1)
		synctest.Wait()
		require.Equal(t, int64(2), wregistered(t, hp.RDB))

		start := time.Now()
		require.NoError(t, holder.Unlock(ctx)) // wakes wp's head
		cancelHead()
		won := writerGaveUp(t, <-head, order)
		require.NoError(t, <-next)
		require.NoError(t, <-other)
		if got := []int{<-order, <-order}; won {
			assert.ElementsMatch(t, []int{1, 2}, got)
		} else {
			assert.Equal(t, []int{1, 2}, got, "the next local writer got the wake, then the other process")
		}
		assert.Equal(t, start, time.Now(), "no hand-off waited for a poll")
		assert.Zero(t, wregistered(t, hp.RDB))

		// The last local writer gives up its wake: it goes to the next process.
		require.NoError(t, holder.Lock(ctx))
		lctx, cancelLast := context.WithCancel(ctx)
		last := writes(lctx, t, wp.C, order, 0)
		synctest.Wait()
		time.Sleep(time.Millisecond)
		other = writes(ctx, t, op.C, order, 2)
		synctest.Wait()
		start = time.Now()
		require.NoError(t, holder.Unlock(ctx))
		cancelLast()
		_ = writerGaveUp(t, <-last, order)
		require.NoError(t, <-other)
		assert.Equal(t, 2, <-order)
		assert.Equal(t, start, time.Now(), "the wake went on to the other process at once")
		assert.Zero(t, wregistered(t, hp.RDB))
	})
}

// writerGaveUp checks how a writer cancelled just after the release that
// woke it ended: given up, or holding the lock (its try ran before the
// cancel reached it), released at once. It reports whether it took it.
func writerGaveUp(t *testing.T, err error, order <-chan int) (took bool) {
	t.Helper()
	if err == nil {
		require.Equal(t, 0, <-order)
		return true
	}
	require.ErrorIs(t, err, context.Canceled)
	return false
}

// The heartbeat keeps a Client's one registration alive while any of its
// local writers waits, however long; a Client that dies with local writers
// leaves that one registration, dropped at its deadline.
func TestClientWritersRegistrationLivesWithThem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ps := wprocs(t, 2)
		hp, wp := ps[0], ps[1]
		holder := rrwlock.New(hp.C, "n")
		require.NoError(t, holder.Lock(ctx))
		order := make(chan int, 3)
		var cancels [3]context.CancelFunc
		var done [3]<-chan error
		for i := range 3 {
			var wctx context.Context
			wctx, cancels[i] = context.WithCancel(ctx)
			done[i] = writes(wctx, t, wp.C, order, i)
			synctest.Wait()
		}
		time.Sleep(70 * time.Second) // two lease TTLs
		assert.Equal(t, int64(1), wregistered(t, hp.RDB), "renewed while the writers wait")
		cancels[0]()
		require.ErrorIs(t, <-done[0], context.Canceled)
		time.Sleep(70 * time.Second)
		assert.Equal(t, int64(1), wregistered(t, hp.RDB), "renewed while writers remain")

		wp.Kill() // dies with two local writers
		for i := 1; i < 3; i++ {
			require.Error(t, <-done[i])
		}
		assert.Equal(t, int64(1), wregistered(t, hp.RDB), "a dead Client leaves one registration")
		time.Sleep(30 * time.Second) // its deadline: a lease TTL after its last renewal
		assert.Zero(t, wregistered(t, hp.RDB), "the dead Client's registration was dropped at its deadline")
		require.NoError(t, holder.Unlock(ctx))
		for i := range cancels {
			cancels[i]()
		}
	})
}
