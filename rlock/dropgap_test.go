package rlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rlock"
)

// staleDrop makes the Client c's last waiter on "n" take the lock with a
// try that kept the Client's registration for another waiter, which left
// while that try was in flight: the waiter's end then drops the
// registration, a request that reaches Redis slow after it was sent. It
// returns the waiter, locked, and a channel that receives when its Lock
// returned (after the drop). holder, in another Client, holds "n" at the
// start and gives it to the waiter.
func staleDrop(t *testing.T, sf *locktest.ScriptFaults, c *redcoord.Client, holder *rlock.Mutex, slow time.Duration) (*rlock.Mutex, <-chan error) {
	t.Helper()
	ctx := context.Background()
	waiter, other := rlock.New(c, "n"), rlock.New(c, "n")
	locked := make(chan error, 1)
	go func() { locked <- waiter.Lock(ctx) }()
	synctest.Wait() // registered
	octx, cancel := context.WithCancel(ctx)
	left := make(chan error, 1)
	go func() { left <- other.Lock(octx) }()
	synctest.Wait() // queued behind the waiter, without a try

	sf.DelayReply("lock_acquire", 100*time.Millisecond)
	require.NoError(t, holder.Unlock(ctx)) // wakes the waiter: its try keeps the registration
	synctest.Wait()
	cancel()
	require.ErrorIs(t, <-left, context.Canceled) // leaves the registration to the waiter
	sf.DelayRequest("lock_leave", slow)          // the waiter's drop
	time.Sleep(101 * time.Millisecond)           // the try's reply came: the drop is on its way
	synctest.Wait()
	return waiter, locked
}

// A new Lock of a Client whose last waiter's drop of the Client's
// registration is in flight registers after that drop: the holder's
// release wakes it at once, rather than its poll timer (1s).
func TestLockDuringDropIsWoken(t *testing.T) {
	locktest.FaultBubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, sf *locktest.ScriptFaults, c *redcoord.Client) {
		ctx := context.Background()
		hc, err := redcoord.New(rdb)
		require.NoError(t, err)
		defer func() { require.NoError(t, hc.Close(ctx)) }()
		holder := rlock.New(hc, "n")
		require.NoError(t, holder.Lock(ctx))
		waiter, locked := staleDrop(t, sf, c, holder, 200*time.Millisecond)

		// A new waiter's try is sent before the drop reaches Redis, and
		// answered after the drop's reply came.
		sf.DelayReply("lock_acquire", 300*time.Millisecond)
		late := rlock.New(c, "n")
		acquired := lockAt(t, late)
		require.NoError(t, <-locked)
		time.Sleep(300 * time.Millisecond) // the new waiter's reply came: it waits
		synctest.Wait()
		assert.Equal(t, int64(1), rdb.ZCard(ctx, registry).Val(), "the new waiter is registered")
		assert.Less(t, handOff(t, waiter, acquired), 100*time.Millisecond, "the release must wake the new waiter")
		require.NoError(t, late.Unlock(ctx))
	})
}

// While a Client's last waiter on a name drops the Client's registration,
// slowly, a Lock of the Client on that name waits for the drop, no longer
// than its context, and a Lock on another name does not wait.
func TestSlowDropBoundsLocks(t *testing.T) {
	locktest.FaultBubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, sf *locktest.ScriptFaults, c *redcoord.Client) {
		ctx := context.Background()
		hc, err := redcoord.New(rdb)
		require.NoError(t, err)
		defer func() { require.NoError(t, hc.Close(ctx)) }()
		holder := rlock.New(hc, "n")
		require.NoError(t, holder.Lock(ctx))
		waiter, locked := staleDrop(t, sf, c, holder, 2*time.Second)

		lctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		err = rlock.New(c, "n").Lock(lctx)
		require.ErrorIs(t, err, redcoord.ErrNotAcquired)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 50*time.Millisecond, time.Since(start), "the same name waits for the drop, within the context")

		octx, cancelOther := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancelOther()
		other := rlock.New(c, "other")
		start = time.Now()
		require.NoError(t, other.Lock(octx))
		assert.Zero(t, time.Since(start), "another name does not wait for the drop")
		require.NoError(t, other.Unlock(ctx))
		require.Empty(t, locked, "the drop is still in flight")

		require.NoError(t, <-locked)
		require.NoError(t, waiter.Unlock(ctx))
	})
}
