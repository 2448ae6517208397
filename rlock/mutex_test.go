package rlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
)

func TestReentry(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		c := locktest.NewClient(t, rdb)
		ctx := context.Background()
		m := rlock.New(c, "stock")
		var first uint64
		held := ctx // after the first Lock, the hold's Context: the re-entries
		for i := 1; i <= 3; i++ {
			require.NoError(t, m.Lock(held))
			if i == 1 {
				var cancel context.CancelFunc
				held, cancel = m.Context(ctx)
				defer cancel()
			}
			n, err := m.HoldCount(ctx)
			require.NoError(t, err)
			assert.Equal(t, int64(i), n)
			if i == 1 {
				first = m.Token()
				assert.Greater(t, first, uint64(0))
			}
			assert.Equal(t, first, m.Token(), "re-entry keeps the token")
		}
		other := rlock.New(c, "stock")
		ok, err := other.TryLock(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "another handle of the same client is another owner")
		n, err := other.HoldCount(ctx)
		require.NoError(t, err)
		assert.Zero(t, n)

		for i := 0; i < 3; i++ {
			require.NoError(t, m.Unlock(ctx))
		}
		err = m.Unlock(ctx)
		assert.ErrorIs(t, err, redcoord.ErrNotHeld)
		assert.NotErrorIs(t, err, redcoord.ErrLeaseLost, "released cleanly, not lost")

		ok, err = other.TryLock(ctx)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Greater(t, other.Token(), first, "the next fresh hold gets a greater token")
		require.NoError(t, other.Unlock(ctx))
	})
}

func TestWaiterGetsLockAfterRelease(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		// Two clients: two processes.
		a := rlock.New(locktest.NewClient(t, rdb), "job")
		b := rlock.New(locktest.NewClient(t, rdb), "job")
		require.NoError(t, a.Lock(ctx))
		got := make(chan error, 1)
		go func() { got <- b.Lock(ctx) }()

		select {
		case err := <-got:
			t.Fatalf("b acquired while a holds: %v", err)
		case <-time.After(50 * time.Millisecond): // b is waiting (or about to)
		}
		require.NoError(t, a.Unlock(ctx))
		select {
		case err := <-got:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("b not woken within 10s of the release")
		}
		assert.Greater(t, b.Token(), uint64(1))
		require.NoError(t, b.Unlock(ctx))
	})
}

func TestForceUnlock(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		// A short TTL so the holder's watchdog ticks every 100ms.
		holder := rlock.New(locktest.NewClient(t, rdb, redcoord.WithLeaseTTL(300*time.Millisecond)), "n")
		admin := rlock.New(locktest.NewClient(t, rdb), "n")
		require.NoError(t, holder.Lock(ctx))
		lost := holder.Lost()
		ok, err := admin.ForceUnlock(ctx)
		require.NoError(t, err)
		assert.True(t, ok)
		select {
		case <-lost:
		case <-time.After(10 * time.Second):
			t.Fatal("holder's Lost not closed within 10s of ForceUnlock")
		}
		assert.ErrorIs(t, holder.Unlock(ctx), redcoord.ErrNotHeld)
		ok, err = admin.ForceUnlock(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "already free")
	})
}

// Bad input, a done ctx, a closed Client and another primitive's key are
// refused and change nothing in Redis: see locktest.BadInput.
func TestBadInput(t *testing.T) {
	locktest.BadInput(t, rlock.New, rlock.WithMaxPollInterval(0), "rfairlock", nil)
}

// A Lock whose context ends returns an error matching both ErrNotAcquired and
// the context's error, and leaves no key, subscription or waiter behind.
func TestLockContextEnds(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		holder := rlock.New(locktest.NewClient(t, rdb), "n")
		require.NoError(t, holder.Lock(ctx))
		c := locktest.NewClient(t, rdb)
		waiter := rlock.New(c, "n")
		tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		err := waiter.Lock(tctx)
		assert.ErrorIs(t, err, redcoord.ErrNotAcquired)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		hub, herr := c.Hub()
		require.NoError(t, herr)
		assert.Zero(t, hub.Stats().Waiters)
		require.NoError(t, holder.Unlock(ctx))
		assert.Equal(t, []string{"rc:{n}:fence"}, locktest.Keys(t, rdb))
		locktest.Eventually(t, func() bool {
			return len(rdb.PubSubChannels(ctx, "rc:{*").Val()) == 0
		}, "PUBSUB CHANNELS empty")
	})
}

// The behaviour every lock with this method set shares (internal/locktest).
func TestBasics(t *testing.T) {
	locktest.Basics(t, func(c *redcoord.Client, name string) *rlock.Mutex { return rlock.New(c, name) })
}
