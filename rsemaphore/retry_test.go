package rsemaphore_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rfairlock"
	"github.com/redcoord/redcoord/rlock"
	"github.com/redcoord/redcoord/rrwlock"
	"github.com/redcoord/redcoord/rsemaphore"
)

// Every call that changes the permits is applied once when go-redis sends
// it again after losing its reply: the server runs the script twice, the
// second copy finds the first's marker. TrySetPermits reports the set it
// made, AddPermits adds once, Drain returns the permits it took (not 0
// with them gone), and SetPermits leaves what it set.
func TestRetriedCallsApplyOnce(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx := context.Background()
		faults := redistest.NewFaults()
		rdb := srv.Client(t, func(o *redis.Options) { o.Dialer = faults.Dialer(nil) })
		c := locktest.NewClient(t, rdb)
		s, x := rsemaphore.New(c, "retried"), rsemaphore.NewExpirable(c, "retried-x")
		// Load the scripts first: a dropped NOSCRIPT reply would only be
		// followed by SCRIPT LOAD and the same EVALSHA, which runs the script once.
		warm, warmX := rsemaphore.New(c, "warm"), rsemaphore.NewExpirable(c, "warm")
		_, err := warm.TrySetPermits(ctx, 1)
		require.NoError(t, err)
		_, err = warm.Drain(ctx)
		require.NoError(t, err)
		_, err = warmX.TrySetPermits(ctx, 1)
		require.ErrorIs(t, err, redcoord.ErrWrongType, "the name is taken; the script is loaded all the same")
		lost := func(script string, call func() error) {
			t.Helper()
			fired := faults.Fired()
			faults.DropReply(locktest.EvalSHA(script))
			require.NoError(t, call())
			require.Equal(t, fired+1, faults.Fired(), "%s: a reply was dropped, and the call retried", script)
		}

		var ok bool
		lost("sem_set", func() (err error) { ok, err = s.TrySetPermits(ctx, 5); return err })
		assert.True(t, ok, "TrySetPermits reports the set it made")
		lost("sem_set", func() error { return s.AddPermits(ctx, 2) })
		assert.Equal(t, rsemaphore.State{Set: true, Available: 7, Total: 7}, semState(t, s), "added once")
		lost("sem_set", func() error { return s.AddPermits(ctx, -3) })
		assert.Equal(t, rsemaphore.State{Set: true, Available: 4, Total: 4}, semState(t, s), "removed once")
		lost("sem_set", func() error { return s.SetPermits(ctx, 6) })
		assert.Equal(t, rsemaphore.State{Set: true, Available: 6, Total: 6}, semState(t, s))

		var n int64
		lost("sem_drain", func() (err error) { n, err = s.Drain(ctx); return err })
		assert.Equal(t, int64(6), n, "Drain returns what it took")
		require.NoError(t, s.Release(ctx, n))
		assert.Equal(t, int64(6), semAvailable(t, s), "every permit is back")

		lost("xsem_set", func() (err error) { ok, err = x.TrySetPermits(ctx, 2); return err })
		assert.True(t, ok)
		lost("xsem_set", func() error { return x.AddPermits(ctx, 1) })
		free, err := x.Available(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(3), free, "added once")
	})
}

// A lock and a semaphore may share a name: they are two objects whose keys
// and channels never meet. A fair lock and a fair Semaphore both queue
// waiters, a read-write lock and an ExpirableSemaphore both keep leases,
// and every lock has a fence; none of them sees the other's.
func TestLocksAndSemaphoresShareNames(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
		defer cancel()
		rdb := srv.Client(t)
		c, other := locktest.NewClient(t, rdb), locktest.NewClient(t, rdb)
		const name = "orders"

		sem := rsemaphore.New(c, name, rsemaphore.WithFair())
		require.NoError(t, sem.SetPermits(ctx, 2))
		require.NoError(t, sem.Acquire(ctx, 2))
		semWaiter := semAsync(ctx, rsemaphore.New(other, name, rsemaphore.WithFair()), 1)
		locktest.Eventually(t, func() bool { return semState(t, sem).Waiting == 1 }, "the semaphore's waiter queues")

		fair, fairWaiter := rfairlock.New(c, name), rfairlock.New(other, name)
		require.NoError(t, fair.Lock(ctx))
		fairDone := make(chan error, 1)
		go func() { fairDone <- fairWaiter.Lock(ctx) }()
		locktest.Eventually(t, func() bool { n, _ := fair.QueueLength(ctx); return n == 1 }, "the lock's waiter queues")

		x := rsemaphore.NewExpirable(c, "seats")
		require.NoError(t, x.SetPermits(ctx, 1))
		rw := rrwlock.New(c, "seats")
		require.NoError(t, rw.RLock(ctx))
		p, err := x.Acquire(ctx, rsemaphore.AcquireOptions{Lease: time.Minute})
		require.NoError(t, err, "the reader's lease is not a permit")
		held, err := x.Acquired(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(1), held)

		tickets := rsemaphore.NewExpirable(c, "tickets")
		require.NoError(t, tickets.SetPermits(ctx, 1))
		tp, err := tickets.Acquire(ctx, rsemaphore.AcquireOptions{Lease: time.Minute})
		require.NoError(t, err)
		mu := rlock.New(c, "tickets")
		require.NoError(t, mu.Lock(ctx), "the ExpirableSemaphore's fence is not the lock's")
		assert.Greater(t, tp.Token, uint64(0))
		assert.Greater(t, mu.Token(), uint64(0))
		assert.Equal(t, [2]string{strconv.FormatUint(tp.Token, 10), strconv.FormatUint(mu.Token(), 10)},
			[2]string{rdb.HGet(ctx, "rc:{tickets}:sem-fence", "n").Val(), rdb.HGet(ctx, "rc:{tickets}:fence", "n").Val()},
			"two fences, each with its own last token")

		require.NoError(t, fair.Unlock(ctx))
		require.NoError(t, semResult(t, fairDone), "the lock goes to its own waiter")
		require.NoError(t, fairWaiter.Unlock(ctx))
		assert.Equal(t, rsemaphore.State{Set: true, Available: 0, Total: 2, Waiting: 1}, semState(t, sem),
			"the semaphore's queue is untouched")
		require.NoError(t, sem.Release(ctx, 2))
		require.NoError(t, semResult(t, semWaiter), "the permits go to their own waiter")
		assert.Equal(t, rsemaphore.State{Set: true, Available: 1, Total: 2}, semState(t, sem))

		require.NoError(t, mu.Unlock(ctx))
		require.NoError(t, rw.RUnlock(ctx))
		require.NoError(t, x.Release(ctx, p))
		require.NoError(t, tickets.Release(ctx, tp))
		for _, c := range []*redcoord.Client{c, other} {
			hub, err := c.Hub()
			require.NoError(t, err)
			locktest.Eventually(t, func() bool { return hub.Stats().Waiters == 0 }, "no Hub waiter left")
		}
	})
}
