package rlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
)

// A final release whose reply is lost is retried by go-redis after a backoff
// in which another owner takes and releases the lock: the retry still
// reports success, not ErrLeaseLost.
func TestRetriedReleaseAfterOthersReleased(t *testing.T) {
	srv := redistest.Real(t)
	faults := redistest.NewFaults()
	rdb := srv.Client(t, func(o *redis.Options) {
		o.Dialer = faults.Dialer(nil)
		o.MinRetryBackoff, o.MaxRetryBackoff = 200*time.Millisecond, 200*time.Millisecond
	})
	ctx := context.Background()
	c := locktest.NewClient(t, rdb)
	a, b := rlock.New(c, "r1"), rlock.New(c, "r1")
	require.NoError(t, a.Lock(ctx))
	require.NoError(t, a.Unlock(ctx)) // load the scripts
	require.NoError(t, a.Lock(ctx))
	bDone := make(chan error, 1)
	go func() {
		if err := b.Lock(ctx); err != nil {
			bDone <- err
			return
		}
		bDone <- b.Unlock(ctx) // within a's retry backoff
	}()
	locktest.Eventually(t, func() bool { h, _ := c.Hub(); return h != nil && h.Stats().Waiters == 1 }, "b waits")
	isRelease, owner := locktest.EvalSHA("lock_release"), a.Owner()
	// EVALSHA sha numkeys, 4 keys, kind publish channel marker-lifetime owner ...
	faults.DropReply(func(args []string) bool { return isRelease(args) && len(args) > 11 && args[11] == owner })
	require.NoError(t, a.Unlock(ctx), "the release was applied; its retry must say so")
	require.NoError(t, <-bDone)
	assert.Equal(t, 1, faults.Fired())
}

// A handle that holds the lock re-enters at once, even while other handles
// of its Client wait.
func TestReentryDoesNotQueueBehindLocalWaiters(t *testing.T) {
	rdb := redistest.Mini(t).Client(t)
	ctx := context.Background()
	c := locktest.NewClient(t, rdb, redcoord.WithMaxPollInterval(time.Hour))
	a, b := rlock.New(c, "r2"), rlock.New(c, "r2")
	require.NoError(t, a.Lock(ctx))
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	bDone := make(chan error, 1)
	go func() { bDone <- b.Lock(bctx) }()
	locktest.Eventually(t, func() bool { h, _ := c.Hub(); return h != nil && h.Stats().Waiters == 1 }, "b waits")
	held, hcancel := a.Context(ctx) // a re-entry names the hold by its Context
	defer hcancel()
	tctx, tcancel := context.WithTimeout(held, 10*time.Second) // a bound, not a timing
	defer tcancel()
	require.NoError(t, a.Lock(tctx), "re-entry must not wait for a release only it can make")
	n, err := a.HoldCount(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(2), n)
	cancel()
	assert.ErrorIs(t, <-bDone, context.Canceled)
}

// An acquire with a context that is already done says both why and what.
func TestDoneContextIsNotAcquired(t *testing.T) {
	rdb := redistest.Mini(t).Client(t)
	c := locktest.NewClient(t, rdb)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m := rlock.New(c, "r3")
	for name, err := range map[string]error{"Lock": m.Lock(ctx), "TryLock": locktest.Second(m.TryLock(ctx)),
		"LockWithLease": m.LockWithLease(ctx, time.Second)} {
		assert.ErrorIs(t, err, context.Canceled, name)
		assert.ErrorIs(t, err, redcoord.ErrNotAcquired, name)
	}
}

// A hold lost behind the handle's back, then replaced by a fresh Lock before
// the watchdog noticed: the first hold's Lost channel closes.
func TestReplacedHoldReportsLoss(t *testing.T) {
	rdb := redistest.Mini(t).Client(t)
	ctx := context.Background()
	c := locktest.NewClient(t, rdb)
	a, admin := rlock.New(c, "r4"), rlock.New(c, "r4")
	require.NoError(t, a.Lock(ctx))
	lost, token := a.Lost(), a.Token()
	ok, err := admin.ForceUnlock(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, a.Lock(ctx)) // the caller may think this re-enters
	assert.Greater(t, a.Token(), token, "a fresh hold")
	assert.True(t, locktest.IsClosed(lost), "the replaced hold's Lost must close")
	assert.False(t, locktest.IsClosed(a.Lost()))
	n, err := a.HoldCount(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)
}

// Concurrent re-entries of one hold, through its Context: after the
// Unlocks that leave holds, the hold is still renewed.
func TestSharedHandleStaysWatched(t *testing.T) {
	rdb := redistest.Mini(t).Client(t)
	ctx := context.Background()
	c := locktest.NewClient(t, rdb)
	m := rlock.New(c, "r5")
	const n = 8
	require.NoError(t, m.Lock(ctx))
	hctx, cancel := m.Context(ctx)
	defer cancel()
	errs := make(chan error, n-1)
	for i := 1; i < n; i++ {
		go func() { errs <- m.Lock(hctx) }() // re-entries, through the hold's Context
	}
	for i := 1; i < n; i++ {
		require.NoError(t, <-errs)
	}
	for i := 0; i < n-1; i++ {
		require.NoError(t, m.Unlock(ctx))
	}
	count, err := m.HoldCount(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), count)
	assert.Equal(t, 1, watched(c), "the remaining hold must still be renewed")
	require.NoError(t, m.Unlock(ctx))
	assert.Equal(t, 0, watched(c))
}

// A fence counter of the wrong type: release still works (it does not touch
// the fence), and the next acquire is refused with ErrWrongType and changes
// nothing.
func TestWrongTypeFence(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		c := locktest.NewClient(t, rdb)
		a := rlock.New(c, "r6")
		require.NoError(t, a.Lock(ctx))
		require.NoError(t, rdb.Del(ctx, "rc:{r6}:fence").Err())
		require.NoError(t, rdb.Set(ctx, "rc:{r6}:fence", "x", 0).Err())
		require.NoError(t, a.Unlock(ctx))
		err := a.Lock(ctx)
		assert.ErrorIs(t, err, redcoord.ErrWrongType)
		assert.Equal(t, []string{"rc:{r6}:fence"}, locktest.Keys(t, rdb))
		assert.Equal(t, "x", rdb.Get(ctx, "rc:{r6}:fence").Val())
	})
}

// watched returns how many leases the Client's watchdog renews.
func watched(c *redcoord.Client) int { return core.Of(c).Watchdog.Len() }
