package locktest

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/redistest"
)

// Reentrant is a reentrant hold with a fixed-lease variant: the locks'
// exclusive holds, and rrwlock's read holds (RLocker and the rest).
type Reentrant interface {
	redcoord.Locker
	LockWithLease(ctx context.Context, lease time.Duration) error
	Extend(ctx context.Context, lease time.Duration) error
	Owner() string
	Token() uint64
}

// Kind describes one kind of hold for the fault tests below.
type Kind struct {
	New                             func(c *redcoord.Client, name string) Reentrant
	Acquire, Release, Leave, Extend string // the names of its scripts
	// Count returns how many holds owner has on name, as Redis sees it.
	Count func(m *miniredis.Miniredis, name, owner string) int64
	// Force ends every hold on name through another handle of c, and
	// reports whether it ended any (ForceUnlock).
	Force func(ctx context.Context, c *redcoord.Client, name string) (bool, error)
	// Shared: goroutines sharing a handle share its holds (a read side),
	// each counted, instead of taking them in turn.
	Shared bool
}

// LockCount is Kind.Count for a lock hash.
func LockCount(m *miniredis.Miniredis, name, owner string) int64 {
	key := lockKey(name)
	if !m.Exists(key) || m.HGet(key, "o") != owner {
		return 0
	}
	n, _ := strconv.ParseInt(m.HGet(key, "c"), 10, 64)
	return n
}

// FaultBubble runs f in a synctest bubble on a miniredis with a Client
// (lease TTL 30 s, renewed every 10 s) whose scripts f can fail.
func FaultBubble(t *testing.T,
	f func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, sf *ScriptFaults, c *redcoord.Client)) {
	synctest.Test(t, func(t *testing.T) {
		m, opts := redistest.Bubble()
		defer m.Close()
		rdb := redis.NewClient(opts)
		defer rdb.Close()
		sf := &ScriptFaults{}
		rdb.AddHook(sf)
		c, err := redcoord.New(rdb)
		require.NoError(t, err)
		defer func() { require.NoError(t, c.Close(context.Background())) }()
		f(t, m, rdb, sf, c)
	})
}

// FailedUnlock checks that a hold whose release failed is no longer
// renewed, whatever became of the request (whoever deferred the release
// will not retry it): its contexts ended as the Unlock was sent (with
// ErrNotHeld); an Unlock again may still release it; otherwise it ends
// with the lease it has, and Lost closes when that lease may end in Redis.
// A failed release of a re-entry leaves the hold renewed.
func FailedUnlock(t *testing.T, k Kind) {
	FaultBubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, sf *ScriptFaults, c *redcoord.Client) {
		ctx := context.Background()
		ttl := c.LeaseTTL()
		x := k.New(c, "n")
		require.NoError(t, x.Lock(ctx))
		hctx, cancelHold := x.Context(ctx)
		defer cancelHold()
		require.NoError(t, x.Lock(hctx))
		lost := x.Lost()
		sf.FailBefore(k.Release)
		require.ErrorIs(t, x.Unlock(ctx), ErrInjected, "a re-entry's release")
		time.Sleep(3 * ttl)
		synctest.Wait()
		assert.False(t, IsClosed(lost), "the hold is still renewed")
		assert.Equal(t, int64(2), k.Count(m, "n", x.Owner()))
		require.NoError(t, x.Unlock(ctx))
		sf.FailBefore(k.Release)
		require.ErrorIs(t, x.Unlock(ctx), ErrInjected)
		assert.Equal(t, int64(1), k.Count(m, "n", x.Owner()), "not released")
		require.NoError(t, x.Unlock(ctx), "released by an Unlock again")
		assert.Zero(t, k.Count(m, "n", x.Owner()))
		time.Sleep(ttl)
		synctest.Wait()
		assert.False(t, IsClosed(lost), "a released hold is not lost")

		require.NoError(t, x.Lock(ctx))
		start := time.Now() // the bubble's clock stands still during I/O
		lost = x.Lost()
		scoped, cancel := x.Context(ctx)
		defer cancel()
		sf.FailBefore(k.Release)
		require.ErrorIs(t, x.Unlock(ctx), ErrInjected)
		require.Error(t, scoped.Err(), "the hold's contexts end as its last Unlock is sent")
		assert.ErrorIs(t, context.Cause(scoped), redcoord.ErrNotHeld)
		ends := start.Add(ttl - ttl/100) // the lease's end, less its margin
		time.Sleep(time.Until(ends) - time.Millisecond)
		synctest.Wait()
		assert.False(t, IsClosed(lost), "held while its lease lasts")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		assert.True(t, IsClosed(lost), "lost when its lease may end: nothing renewed it")
		time.Sleep(ttl/100 + time.Millisecond)
		synctest.Wait()
		assert.Zero(t, k.Count(m, "n", x.Owner()), "expired in Redis")
		assert.ErrorIs(t, x.Unlock(ctx), redcoord.ErrLeaseLost)

		require.NoError(t, x.Lock(ctx))
		lost = x.Lost()
		sf.FailAfter(k.Release)
		require.ErrorIs(t, x.Unlock(ctx), ErrInjected)
		assert.Zero(t, k.Count(m, "n", x.Owner()), "the release was applied")
		time.Sleep(ttl)
		synctest.Wait()
		assert.True(t, IsClosed(lost), "not renewed: lost when its lease may end")
		assert.ErrorIs(t, x.Unlock(ctx), redcoord.ErrLeaseLost)
	})
}

// UnknownExtend checks that an Extend applied in Redis whose reply was lost
// has the hold reported lost before the lease it set ends in Redis (no
// renewal extends it any more), though the handle cannot tell whether it
// was applied; and that a later Extend that succeeds sets the lease the
// hold is watched by.
func UnknownExtend(t *testing.T, k Kind) {
	FaultBubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, sf *ScriptFaults, c *redcoord.Client) {
		ctx := context.Background()
		x := k.New(c, "n")
		require.NoError(t, x.Lock(ctx))
		lost := x.Lost()
		sf.FailAfter(k.Extend)
		require.ErrorIs(t, x.Extend(ctx, 5*time.Second), ErrInjected)
		time.Sleep(4900 * time.Millisecond)
		synctest.Wait()
		assert.False(t, IsClosed(lost), "held until the lease it may have set nears its end")
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		assert.True(t, IsClosed(lost), "lost before the lease set in Redis ends, not at the next renewal")
		assert.ErrorIs(t, x.Unlock(ctx), redcoord.ErrLeaseLost)

		require.NoError(t, x.Lock(ctx))
		lost = x.Lost()
		sf.FailAfter(k.Extend)
		require.ErrorIs(t, x.Extend(ctx, 5*time.Second), ErrInjected)
		require.NoError(t, x.Extend(ctx, time.Minute))
		time.Sleep(50 * time.Second)
		synctest.Wait()
		assert.False(t, IsClosed(lost), "the Extend that succeeded replaced the unknown one")
		assert.Equal(t, int64(1), k.Count(m, "n", x.Owner()))
		time.Sleep(11 * time.Second)
		synctest.Wait()
		assert.True(t, IsClosed(lost), "lost when its minute ends")
	})
}

// OrphanedAcquire checks that an acquire applied in Redis whose reply and
// undo were both lost leaves no hold behind: the handle's next acquire takes
// the orphan over as a fresh hold, which its one release frees.
func OrphanedAcquire(t *testing.T, k Kind) {
	FaultBubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, sf *ScriptFaults, c *redcoord.Client) {
		ctx := context.Background()
		x := k.New(c, "n")
		sf.FailAfter(k.Acquire)
		sf.FailBefore(k.Leave)
		require.ErrorIs(t, x.Lock(ctx), ErrInjected)
		require.Equal(t, int64(1), k.Count(m, "n", x.Owner()), "the orphan: applied, and not undone")
		assert.Zero(t, x.Token(), "the handle holds nothing")

		require.NoError(t, x.Lock(ctx))
		assert.Equal(t, int64(1), k.Count(m, "n", x.Owner()), "taken over, not re-entered")
		require.NoError(t, x.Unlock(ctx))
		assert.Zero(t, k.Count(m, "n", x.Owner()), "one Unlock frees it")
		time.Sleep(3 * c.LeaseTTL())
		assert.Zero(t, k.Count(m, "n", x.Owner()), "nothing renews it")
	})
}

// OrphanedReentry checks that a re-entry applied in Redis whose reply and
// undo were both lost (its caller was told it failed) does not outlive the
// hold: Redis counts one hold more than the handle, and the handle's last
// Unlock frees the name all the same, which another handle then takes.
func OrphanedReentry(t *testing.T, k Kind) {
	FaultBubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, sf *ScriptFaults, c *redcoord.Client) {
		ctx := context.Background()
		x, y := k.New(c, "n"), k.New(c, "n")
		require.NoError(t, x.Lock(ctx))
		hctx, cancel := x.Context(ctx) // a call under it re-enters the hold
		defer cancel()
		sf.FailAfter(k.Acquire)
		sf.FailBefore(k.Leave)
		require.ErrorIs(t, x.Lock(hctx), ErrInjected)
		require.Equal(t, int64(2), k.Count(m, "n", x.Owner()), "the re-entry: applied, and not undone")

		require.NoError(t, x.Lock(hctx), "a re-entry the caller knows of")
		require.NoError(t, x.Unlock(ctx))
		require.NoError(t, x.Unlock(ctx), "one hold left, by the handle's count")
		assert.Zero(t, k.Count(m, "n", x.Owner()), "the last Unlock frees the name")
		assert.ErrorIs(t, x.Unlock(ctx), redcoord.ErrNotHeld)
		time.Sleep(3 * c.LeaseTTL())
		assert.Zero(t, k.Count(m, "n", x.Owner()), "nothing renews it")
		if !k.Shared {
			ok, err := y.TryLock(ctx)
			require.NoError(t, err)
			require.True(t, ok, "another handle takes the name")
			require.NoError(t, y.Unlock(ctx))
		}
	})
}

// LateAcquire checks that a copy of an acquire request that reaches Redis
// after the request was left (its wait ended, the leave ran) is refused.
func LateAcquire(t *testing.T, k Kind) {
	FaultBubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, sf *ScriptFaults, c *redcoord.Client) {
		ctx := context.Background()
		x := k.New(c, "n")
		require.NoError(t, x.Lock(ctx)) // loads the scripts
		require.NoError(t, x.Unlock(ctx))
		sf.FailBefore(k.Acquire)
		require.ErrorIs(t, x.Lock(ctx), ErrInjected)
		held := sf.Held()
		require.Len(t, held, 1)
		_ = rdb.Do(ctx, held[0]...).Err() // the late copy
		assert.Zero(t, k.Count(m, "n", x.Owner()), "the late copy took nothing")
		require.NoError(t, x.Lock(ctx))
		require.NoError(t, x.Unlock(ctx))
		assert.Zero(t, k.Count(m, "n", x.Owner()))
	})
}

// LossOneMeaning checks that once Lost has closed, Unlock returns
// ErrLeaseLost: after a fixed lease ended while Redis still had the hold
// (which Unlock deletes; an Unlock whose request fails says ErrLeaseLost
// all the same), and after another handle forced the lock open.
// It also checks that goroutines sharing the handle then take fresh holds,
// one at a time (or together, for a Shared kind), none of them lost.
func LossOneMeaning(t *testing.T, k Kind) {
	FaultBubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, sf *ScriptFaults, c *redcoord.Client) {
		ctx := context.Background()
		x := k.New(c, "n")
		require.NoError(t, x.LockWithLease(ctx, 5*time.Second))
		lost := x.Lost()
		for _, key := range m.Keys() { // the server's expiry comes later than the holder's
			if ttl := m.TTL(key); ttl > 0 {
				m.SetTTL(key, ttl+time.Second)
			}
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		require.True(t, IsClosed(lost))
		require.Equal(t, int64(1), k.Count(m, "n", x.Owner()), "Redis still has the hold")
		sf.FailBefore(k.Release) // Redis unreachable: the release does not get there
		err := x.Unlock(ctx)
		assert.ErrorIs(t, err, redcoord.ErrLeaseLost, "lost, whatever became of the release")
		assert.ErrorContains(t, err, ErrInjected.Error(), "naming why the hold was not deleted")
		require.Equal(t, int64(1), k.Count(m, "n", x.Owner()), "left to its lease")
		assert.ErrorIs(t, x.Unlock(ctx), redcoord.ErrLeaseLost)
		assert.Zero(t, k.Count(m, "n", x.Owner()), "Unlock deleted it")
		assert.ErrorIs(t, x.Unlock(ctx), redcoord.ErrLeaseLost, "and says so again")

		require.NoError(t, x.Lock(ctx))
		lost = x.Lost()
		require.NoError(t, Second(k.Force(ctx, c, "n")))
		time.Sleep(c.LeaseTTL()/3 + time.Millisecond)
		synctest.Wait()
		require.True(t, IsClosed(lost), "the renewal found the hold gone")
		assert.ErrorIs(t, x.Unlock(ctx), redcoord.ErrLeaseLost)

		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				assert.NoError(t, x.Lock(ctx))
				if n := k.Count(m, "n", x.Owner()); k.Shared {
					assert.Contains(t, []int64{1, 2}, n, "each goroutine's hold counted once")
				} else {
					assert.Equal(t, int64(1), n, "one goroutine's hold at a time")
				}
				assert.False(t, IsClosed(x.Lost()))
				assert.NoError(t, x.Unlock(ctx))
			})
		}
		wg.Wait()
		assert.Zero(t, k.Count(m, "n", x.Owner()))
	})
}

// LateReply checks that an acquire answered after its lease could have
// ended leaves no hold that is lost as soon as it is taken. When Redis
// stalled before running it, the hold it took is new: a watchdog-renewed
// hold is confirmed by a renewal and kept, and a fixed lease, which cannot
// be confirmed without changing it, is given back and the acquire fails.
// When the reply itself was that late, the hold is gone by then: the
// acquire fails and nothing is left.
func LateReply(t *testing.T, k Kind) {
	FaultBubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, sf *ScriptFaults, c *redcoord.Client) {
		ctx := context.Background()
		x := k.New(c, "n")
		require.NoError(t, x.Lock(ctx)) // loads the scripts
		require.NoError(t, x.Unlock(ctx))

		sf.DelayRequest(k.Acquire, c.LeaseTTL())
		require.NoError(t, x.Lock(ctx))
		assert.False(t, IsClosed(x.Lost()), "confirmed, not lost")
		time.Sleep(3 * c.LeaseTTL())
		synctest.Wait()
		assert.False(t, IsClosed(x.Lost()), "renewed by the watchdog")
		assert.Equal(t, int64(1), k.Count(m, "n", x.Owner()))
		require.NoError(t, x.Unlock(ctx))

		sf.DelayRequest(k.Acquire, 5*time.Second)
		assert.ErrorIs(t, x.LockWithLease(ctx, 5*time.Second), redcoord.ErrNotAcquired)
		assert.Zero(t, k.Count(m, "n", x.Owner()), "the late fixed lease was given back")
		assert.Zero(t, x.Token())

		// A re-entry answered late changes no lease: nothing to confirm,
		// and a fixed lease is not cut down to the watchdog's TTL.
		require.NoError(t, x.LockWithLease(ctx, time.Hour))
		hctx, cancelHold := x.Context(ctx)
		defer cancelHold()
		sf.DelayRequest(k.Acquire, c.LeaseTTL())
		require.NoError(t, x.Lock(hctx))
		assert.Equal(t, int64(2), k.Count(m, "n", x.Owner()))
		time.Sleep(3 * c.LeaseTTL())
		synctest.Wait()
		assert.False(t, IsClosed(x.Lost()))
		assert.Equal(t, int64(2), k.Count(m, "n", x.Owner()), "the fixed lease stands")
		require.NoError(t, x.Unlock(ctx))
		require.NoError(t, x.Unlock(ctx))

		sf.DelayReply(k.Acquire, c.LeaseTTL())
		assert.ErrorIs(t, x.Lock(ctx), redcoord.ErrNotAcquired, "the hold expired before its reply came")
		assert.Zero(t, k.Count(m, "n", x.Owner()))
		assert.Zero(t, x.Token())
		require.NoError(t, x.Lock(ctx), "and the next Lock takes it")
		require.NoError(t, x.Unlock(ctx))
	})
}

// SharedHandle checks that goroutines sharing one handle take its hold in
// turn whatever the order their requests reach Redis in (see "Sharing a
// handle" at redcoord.Locker): no Lock takes another's hold for an orphan,
// and the last Unlock frees the name.
func SharedHandle(t *testing.T, k Kind) {
	FaultBubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, sf *ScriptFaults, c *redcoord.Client) {
		ctx := context.Background()
		x := k.New(c, "n")
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 50 {
					require.NoError(t, x.Lock(ctx))
					if (g+i)%3 == 0 {
						time.Sleep(time.Millisecond) // holds overlap
					}
					require.NoError(t, x.Unlock(ctx))
				}
			})
		}
		wg.Wait()
		assert.Zero(t, k.Count(m, "n", x.Owner()), "every hold released")
		assert.False(t, IsClosed(x.Lost()), "nothing was lost")
		assert.ErrorIs(t, x.Unlock(ctx), redcoord.ErrNotHeld)
	})
}

// TurnBounded checks that a call on a handle waiting for another call's
// request (stuck on a dead connection) is bounded by its own context: a
// Lock with a one-second deadline returns then, not when the stuck release
// ends five seconds later (within the release's own bound, a third of the
// lease, so that it still releases).
func TurnBounded(t *testing.T, k Kind) {
	FaultBubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, sf *ScriptFaults, c *redcoord.Client) {
		ctx := context.Background()
		x := k.New(c, "n")
		require.NoError(t, x.Lock(ctx))
		sf.DelayRequest(k.Release, 5*time.Second)
		released := make(chan error, 1)
		go func() { released <- x.Unlock(ctx) }()
		synctest.Wait() // the release holds the handle's turn

		start := time.Now()
		lctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		err := x.Lock(lctx)
		assert.ErrorIs(t, err, redcoord.ErrNotAcquired)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, time.Second, time.Since(start), "returned at its own deadline")
		require.NoError(t, <-released)
	})
}
