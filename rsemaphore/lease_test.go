package rsemaphore_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rsemaphore"
)

// In a bubble (see crash_test.go), the exact times at which a permit's
// lease ends and its Lost closes.

// leaseAt sleeps until d after start, then checks whether p is held in
// Redis and whether its Lost is closed.
func leaseAt(t *testing.T, s *rsemaphore.ExpirableSemaphore, p rsemaphore.Permit, start time.Time, d time.Duration, held, lost bool) {
	t.Helper()
	time.Sleep(time.Until(start.Add(d)))
	synctest.Wait()
	_, acq := expCounts(t, s)
	if held {
		assert.Equal(t, int64(1), acq, "at %v: the permit is gone", d)
	} else {
		assert.Zero(t, acq, "at %v: the permit is held", d)
	}
	if lost {
		assert.True(t, locktest.IsClosed(p.Lost()), "at %v: Lost is open", d)
	} else {
		assert.False(t, locktest.IsClosed(p.Lost()), "at %v: Lost is closed", d)
	}
}

// fixedEnd checks that p, whose fixed lease of length d ends end after
// start, is reported lost lease.Margin(d) before that, not a millisecond
// sooner, and is held in Redis until end, not a millisecond longer.
func fixedEnd(t *testing.T, s *rsemaphore.ExpirableSemaphore, p rsemaphore.Permit, start time.Time, end, d time.Duration) {
	t.Helper()
	loss := end - lease.Margin(d)
	leaseAt(t, s, p, start, loss-time.Millisecond, true, false)
	leaseAt(t, s, p, start, loss, true, true)
	leaseAt(t, s, p, start, end-time.Millisecond, true, true)
	leaseAt(t, s, p, start, end, false, true)
}

// A fixed lease ends when it says, and Lost closes lease.Margin before, not
// a millisecond sooner; Release first leaves Lost open for good.
func TestPermitLostWhenFixedLeaseEnds(t *testing.T) {
	locktest.InBubble(t, 1, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		s := rsemaphore.NewExpirable(ps[0].C, "n")
		require.NoError(t, s.SetPermits(ctx, 2))
		start := time.Now()
		p := expAcquire(t, s, rsemaphore.AcquireOptions{Lease: 5 * time.Second})
		fixedEnd(t, s, p, start, 5*time.Second, 5*time.Second)
		err := s.Release(ctx, p)
		assert.ErrorIs(t, err, redcoord.ErrLeaseLost)
		assert.ErrorIs(t, err, redcoord.ErrNotHeld)

		p = expAcquire(t, s, rsemaphore.AcquireOptions{Lease: 5 * time.Second})
		time.Sleep(time.Second)
		require.NoError(t, s.Release(ctx, p))
		time.Sleep(10 * time.Second)
		synctest.Wait()
		assert.False(t, locktest.IsClosed(p.Lost()), "Lost closed after Release")
		av, acq := expCounts(t, s)
		assert.Equal(t, [2]int64{2, 0}, [2]int64{av, acq})
	})
}

// A permit the watchdog keeps outlives many TTLs. Extend makes it fixed:
// the watchdog no longer renews it (a renewal at 100s would make it last
// until 130s), and it ends when the new lease does, its Lost closing
// lease.Margin of the new lease before.
// Extending a fixed lease moves its end.
func TestExtendMakesPermitFixed(t *testing.T) {
	locktest.InBubble(t, 1, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		s := rsemaphore.NewExpirable(ps[0].C, "n")
		require.NoError(t, s.SetPermits(ctx, 2))
		start := time.Now()
		kept := expAcquire(t, s, rsemaphore.AcquireOptions{}) // renewed at 10s, 20s, ...
		leaseAt(t, s, kept, start, 95*time.Second, true, false)
		require.NoError(t, s.Extend(ctx, kept, 8*time.Second))
		fixedEnd(t, s, kept, start, 103*time.Second, 8*time.Second)
		assert.ErrorIs(t, s.Release(ctx, kept), redcoord.ErrLeaseLost)

		start = time.Now()
		fixed := expAcquire(t, s, rsemaphore.AcquireOptions{Lease: 5 * time.Second})
		time.Sleep(3 * time.Second)
		require.NoError(t, s.Extend(ctx, fixed, 10*time.Second))
		fixedEnd(t, s, fixed, start, 13*time.Second, 10*time.Second)
	})
}

// A permit the watchdog keeps that another handle releases is found gone by
// the next renewal, which closes its Lost; the keeper's Release then says
// the lease was lost.
func TestRenewalFindsPermitGone(t *testing.T) {
	locktest.InBubble(t, 2, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		s, other := rsemaphore.NewExpirable(ps[0].C, "n"), rsemaphore.NewExpirable(ps[1].C, "n")
		require.NoError(t, s.SetPermits(ctx, 1))
		start := time.Now()
		p := expAcquire(t, s, rsemaphore.AcquireOptions{}) // renewed at 10s, 20s, ...
		time.Sleep(5 * time.Second)
		require.NoError(t, other.Release(ctx, p))
		time.Sleep(time.Until(start.Add(10*time.Second - time.Millisecond)))
		synctest.Wait()
		assert.False(t, locktest.IsClosed(p.Lost()), "closed before the renewal")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		assert.True(t, locktest.IsClosed(p.Lost()), "the renewal did not close Lost")
		err := s.Release(ctx, p)
		assert.ErrorIs(t, err, redcoord.ErrLeaseLost)
		assert.ErrorIs(t, err, redcoord.ErrNotHeld)
	})
}

// A watchdog renewal in flight when Extend makes a permit fixed must not
// undo the fixed lease. Here the renewal's reply is lost, so go-redis sends
// the renewal pipeline again after its retry backoff (8 to 16ms), and
// Extend runs in between: the retried renewal lands after it, and leaves
// the fixed permit alone, because the renewal script tells a fixed permit
// apart in Redis.
func TestExtendNotUndoneByRetriedRenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mr, opts := redistest.Bubble()
		defer mr.Close()
		p := locktest.NewProc(t, opts)
		faults := p.Faults
		defer p.Kill()
		s := rsemaphore.NewExpirable(p.C, "n")
		require.NoError(t, s.SetPermits(ctx, 1))

		start := time.Now()
		kept := expAcquire(t, s, rsemaphore.AcquireOptions{}) // renewed at 10s, 20s, ...
		faults.DropReply(locktest.EvalSHA("xsem_extend"))     // the renewal at 10s
		time.Sleep(10 * time.Second)
		synctest.Wait() // the watchdog waits to send its renewal again
		require.Equal(t, 1, faults.Fired())
		require.NoError(t, s.Extend(ctx, kept, time.Second))
		fixedEnd(t, s, kept, start, 11*time.Second, time.Second)
	})
}

// Extend makes a permit fixed from any handle: the watchdog of the handle
// that acquired it must not renew it past the new lease (the renewal
// script tells a fixed permit apart in Redis).
func TestExtendFromAnotherHandleIsFixed(t *testing.T) {
	locktest.InBubble(t, 2, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		s, other := rsemaphore.NewExpirable(ps[0].C, "n"), rsemaphore.NewExpirable(ps[1].C, "n")
		require.NoError(t, s.SetPermits(ctx, 1))
		start := time.Now()
		kept := expAcquire(t, s, rsemaphore.AcquireOptions{}) // renewed at 10s, 20s, ...
		time.Sleep(time.Second)
		require.NoError(t, other.Extend(ctx, kept, 15*time.Second))
		time.Sleep(time.Until(start.Add(16*time.Second - time.Millisecond)))
		_, acq := expCounts(t, s)
		assert.Equal(t, int64(1), acq, "the permit ended before its lease")
		time.Sleep(time.Millisecond)
		_, acq = expCounts(t, s)
		assert.Zero(t, acq, "the permit outlived its fixed lease: the watchdog renewed it")
		time.Sleep(time.Until(start.Add(20 * time.Second)))
		synctest.Wait()
		assert.True(t, locktest.IsClosed(kept.Lost()), "the holder's next renewal did not find the permit gone")
	})
}
