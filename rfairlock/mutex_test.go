package rfairlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rfairlock"
)

func TestReentryDoesNotQueue(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		m := rfairlock.New(locktest.NewClient(t, rdb), "stock")
		waiter := rfairlock.New(locktest.NewClient(t, rdb), "stock")
		require.NoError(t, m.Lock(ctx))
		first := m.Token()
		assert.Greater(t, first, uint64(0))
		got := make(chan error, 1)
		go func() { got <- waiter.Lock(ctx) }()
		locktest.Eventually(t, func() bool { n, _ := m.QueueLength(ctx); return n == 1 }, "waiter queued")

		held, cancel := m.Context(ctx)
		defer cancel()
		for i := 2; i <= 3; i++ {
			require.NoError(t, m.Lock(held), "re-entry while another handle waits")
			n, err := m.HoldCount(ctx)
			require.NoError(t, err)
			assert.Equal(t, int64(i), n)
			assert.Equal(t, first, m.Token(), "re-entry keeps the token")
		}
		ok, err := m.TryLock(held)
		require.NoError(t, err)
		assert.True(t, ok, "TryLock re-enters too")
		assert.Equal(t, first, m.Token(), "re-entry by TryLock keeps the token")
		pos, err := m.Position(ctx)
		require.NoError(t, err)
		assert.Zero(t, pos, "the holder never queued")

		for i := 0; i < 4; i++ {
			require.NoError(t, m.Unlock(ctx))
		}
		require.NoError(t, <-got)
		assert.Greater(t, waiter.Token(), first, "the waiter's fresh hold gets a greater token")
		assert.ErrorIs(t, m.Unlock(ctx), redcoord.ErrNotHeld)
		require.NoError(t, waiter.Unlock(ctx))
	})
}

// A release hands the lock to the waiter, which holds it once with the next
// token, and the queue's keys are gone.
func TestReleaseGrantsTheWaiter(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		a := rfairlock.New(locktest.NewClient(t, rdb), "job")
		b := rfairlock.New(locktest.NewClient(t, rdb), "job")
		require.NoError(t, a.Lock(ctx))
		aToken := a.Token()
		got := make(chan error, 1)
		go func() { got <- b.LockWithLease(ctx, time.Minute) }()
		locktest.Eventually(t, func() bool { p, _ := b.Position(ctx); return p == 1 }, "b first in the queue")
		n, err := a.QueueLength(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, n)

		require.NoError(t, a.Unlock(ctx))
		select {
		case err := <-got:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("b not granted within 10s of the release")
		}
		assert.Greater(t, b.Token(), aToken, "the grant is a fresh hold, with a greater token")
		n64, err := b.HoldCount(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(1), n64)
		h, ok, err := b.Holder(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, b.Token(), h.Token)
		assert.True(t, h.Fixed, "the grant carries b's own lease")
		assert.Equal(t, time.Minute, h.Lease)
		assert.ElementsMatch(t, []string{"rc:{job}:fence", "rc:{job}:lock"}, locktest.Keys(t, rdb))
		require.NoError(t, b.Unlock(ctx))
	})
}

// TryLock never queues and never overtakes a waiter, even when the lock is
// free because its holder's lease ran out: that lock goes to the waiter.
func TestTryLockNeverOvertakes(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		holder := rfairlock.New(locktest.NewClient(t, rdb), "n")
		waiter := rfairlock.New(locktest.NewClient(t, rdb), "n")
		other := rfairlock.New(locktest.NewClient(t, rdb), "n")
		require.NoError(t, holder.LockWithLease(ctx, time.Hour))
		holderToken := holder.Token()
		ok, err := other.TryLock(ctx)
		require.NoError(t, err)
		assert.False(t, ok)
		n, err := other.QueueLength(ctx)
		require.NoError(t, err)
		assert.Zero(t, n, "TryLock does not queue")

		got := make(chan error, 1)
		go func() { got <- waiter.Lock(ctx) }()
		locktest.Eventually(t, func() bool { p, _ := waiter.Position(ctx); return p == 1 }, "waiter queued")
		require.NoError(t, rdb.Del(ctx, "rc:{n}:lock").Err()) // the holder's lease runs out
		ok, err = other.TryLock(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "TryLock took a free lock from a waiter")
		require.NoError(t, <-got, "the waiter was granted the expired lock")
		assert.Greater(t, waiter.Token(), holderToken)
		require.NoError(t, waiter.Unlock(ctx))

		ok, err = other.TryLock(ctx)
		require.NoError(t, err)
		assert.True(t, ok, "free, nobody queued")
		require.NoError(t, other.Unlock(ctx))
	})
}

// ForceUnlock frees the lock and hands it to the first waiter.
func TestForceUnlockGrantsTheHead(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		holder := rfairlock.New(locktest.NewClient(t, rdb, redcoord.WithLeaseTTL(300*time.Millisecond)), "n")
		waiter := rfairlock.New(locktest.NewClient(t, rdb), "n")
		admin := rfairlock.New(locktest.NewClient(t, rdb), "n")
		require.NoError(t, holder.Lock(ctx))
		lost := holder.Lost()
		got := make(chan error, 1)
		go func() { got <- waiter.Lock(ctx) }()
		locktest.Eventually(t, func() bool { n, _ := admin.QueueLength(ctx); return n == 1 }, "waiter queued")

		ok, err := admin.ForceUnlock(ctx)
		require.NoError(t, err)
		assert.True(t, ok)
		require.NoError(t, <-got)
		h, ok, err := admin.Holder(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, waiter.Owner(), h.Owner)
		select {
		case <-lost:
		case <-time.After(10 * time.Second):
			t.Fatal("holder's Lost not closed within 10s of ForceUnlock")
		}
		assert.ErrorIs(t, holder.Unlock(ctx), redcoord.ErrNotHeld)
		require.NoError(t, waiter.Unlock(ctx))
		ok, err = admin.ForceUnlock(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "already free")
	})
}

// A Lock whose context ends returns an error matching both ErrNotAcquired and
// the context's error, and leaves no queue entry, subscription or waiter.
func TestLockContextEnds(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		holder := rfairlock.New(locktest.NewClient(t, rdb), "n")
		require.NoError(t, holder.Lock(ctx))
		c := locktest.NewClient(t, rdb)
		waiter := rfairlock.New(c, "n")
		tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		err := waiter.Lock(tctx)
		assert.ErrorIs(t, err, redcoord.ErrNotAcquired)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		hub, herr := c.Hub()
		require.NoError(t, herr)
		assert.Zero(t, hub.Stats().Waiters)
		n, err := holder.QueueLength(ctx)
		require.NoError(t, err)
		assert.Zero(t, n)
		assert.ElementsMatch(t, []string{"rc:{n}:fence", "rc:{n}:lock"}, locktest.Keys(t, rdb), "queue keys gone")
		require.NoError(t, holder.Unlock(ctx))
		locktest.Eventually(t, func() bool {
			return len(rdb.PubSubChannels(ctx, "rc:{*").Val()) == 0
		}, "PUBSUB CHANNELS empty")
	})
}

// The behaviour every lock with this method set shares (internal/locktest).
func TestBasics(t *testing.T) {
	locktest.Basics(t, func(c *redcoord.Client, name string) *rfairlock.Mutex { return rfairlock.New(c, name) })
}
