package rsemaphore_test

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rsemaphore"
)

// expProc is one process of the expirable tests: its own connections, with
// faults to inject and round trips counted, and its own Client.
type expProc struct {
	rdb    *redis.Client
	c      *redcoord.Client
	faults *redistest.Faults
	rt     *redistest.RoundTrips
}

func newExpProc(t *testing.T, srv *redistest.Server, opts ...redcoord.Option) *expProc {
	p := &expProc{faults: redistest.NewFaults(), rt: &redistest.RoundTrips{}}
	p.rdb = srv.Client(t, func(o *redis.Options) {
		o.Dialer = p.faults.Dialer(nil)
		o.MinRetryBackoff, o.MaxRetryBackoff = time.Millisecond, 2*time.Millisecond
	})
	p.rdb.AddHook(p.rt)
	p.c = locktest.NewClient(t, p.rdb, opts...)
	return p
}

// expCounts returns the permits available and acquired, as two reads.
func expCounts(t *testing.T, s *rsemaphore.ExpirableSemaphore) (available, acquired int64) {
	t.Helper()
	ctx := context.Background()
	available, err := s.Available(ctx)
	require.NoError(t, err)
	acquired, err = s.Acquired(ctx)
	require.NoError(t, err)
	return available, acquired
}

func expAcquire(t *testing.T, s *rsemaphore.ExpirableSemaphore, opts rsemaphore.AcquireOptions) rsemaphore.Permit {
	t.Helper()
	p, err := s.Acquire(context.Background(), opts)
	require.NoError(t, err)
	require.NotEmpty(t, p.ID)
	require.NotNil(t, p.Lost())
	return p
}

// Acquire, TryAcquire and Release from handles in two processes; the
// permits' totals set, resized and grown; every permit has a fresh id and
// a token one above the last.
func TestExpirableAcquireRelease(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx := context.Background()
		a, b := newExpProc(t, srv), newExpProc(t, srv)
		s, other := rsemaphore.NewExpirable(a.c, "x"), rsemaphore.NewExpirable(b.c, "x")

		_, err := s.Available(ctx)
		assert.ErrorIs(t, err, redcoord.ErrNotSet)
		_, err = s.Acquired(ctx)
		assert.ErrorIs(t, err, redcoord.ErrNotSet)
		ok, err := s.TrySetPermits(ctx, 3)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = other.TrySetPermits(ctx, 5)
		require.NoError(t, err)
		require.False(t, ok, "set twice")
		av, acq := expCounts(t, s)
		require.Equal(t, [2]int64{3, 0}, [2]int64{av, acq})

		p1 := expAcquire(t, s, rsemaphore.AcquireOptions{})
		p2, ok, err := other.TryAcquire(ctx, rsemaphore.AcquireOptions{Lease: time.Hour})
		require.NoError(t, err)
		require.True(t, ok)
		p3 := expAcquire(t, s, rsemaphore.AcquireOptions{Lease: time.Hour})
		assert.Greater(t, p1.Token, uint64(0))
		assert.Less(t, p1.Token, p2.Token, "each permit's token is above the last")
		assert.Less(t, p2.Token, p3.Token, "each permit's token is above the last")
		assert.NotEqual(t, p1.ID, p2.ID)
		assert.NotEqual(t, p1.ID, p3.ID)
		av, acq = expCounts(t, s)
		require.Equal(t, [2]int64{0, 3}, [2]int64{av, acq})

		busy, ok, err := s.TryAcquire(ctx, rsemaphore.AcquireOptions{})
		require.NoError(t, err)
		require.False(t, ok)
		assert.Equal(t, rsemaphore.Permit{}, busy)
		assert.Nil(t, busy.Lost())

		require.NoError(t, s.Release(ctx, p2), "a permit is released by any handle")
		assert.False(t, locktest.IsClosed(p2.Lost()))
		av, acq = expCounts(t, other)
		require.Equal(t, [2]int64{1, 2}, [2]int64{av, acq})
		p4 := expAcquire(t, other, rsemaphore.AcquireOptions{})
		assert.Greater(t, p4.Token, p3.Token, "tokens go on increasing")

		require.NoError(t, s.SetPermits(ctx, 1))
		av, acq = expCounts(t, s)
		require.Equal(t, [2]int64{-2, 3}, [2]int64{av, acq}, "held permits stay held")
		require.NoError(t, s.AddPermits(ctx, 4))
		av, _ = expCounts(t, s)
		require.Equal(t, int64(2), av)
		assert.ErrorIs(t, s.AddPermits(ctx, -6), redcoord.ErrInvalidArgument)
		av, _ = expCounts(t, s)
		require.Equal(t, int64(2), av, "a refused AddPermits changed the total")
		require.NoError(t, s.AddPermits(ctx, -2))

		for _, p := range []rsemaphore.Permit{p1, p3, p4} {
			require.NoError(t, other.Release(ctx, p))
			assert.False(t, locktest.IsClosed(p.Lost()), "Lost closed by Release")
		}
		av, acq = expCounts(t, s)
		require.Equal(t, [2]int64{3, 0}, [2]int64{av, acq})
		assert.ElementsMatch(t, []string{"rc:{x}:permits", "rc:{x}:sem-fence", "rc:{x}:done"}, locktest.Keys(t, a.rdb),
			"leases and tokens go with the last permit; done expires by itself")
	})
}

// 16 handles in 3 processes take and give back permits at once: every
// token is handed out once, and each handle sees its own tokens increase.
// Tokens are floored by the server's clock; on a fence ahead of the clock
// they count up by one (see next_token in scripts/lib.lua), and then none is
// skipped either.
func TestExpirableTokensIncrease(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		const handles, rounds = 16, 8
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		procs := []*expProc{newExpProc(t, srv), newExpProc(t, srv), newExpProc(t, srv)}
		for _, ahead := range []bool{false, true} {
			name := map[bool]string{false: "clock", true: "ahead"}[ahead]
			require.NoError(t, rsemaphore.NewExpirable(procs[0].c, name).SetPermits(ctx, 3))
			const base = uint64(1) << 52
			if ahead {
				require.NoError(t, procs[0].rdb.HSet(ctx, "rc:{"+name+"}:sem-fence", "n", base).Err())
			}
			tokens := make([][]uint64, handles)
			var wg sync.WaitGroup
			for h := range tokens {
				s := rsemaphore.NewExpirable(procs[h%len(procs)].c, name)
				wg.Go(func() {
					for range rounds {
						p, err := s.Acquire(ctx, rsemaphore.AcquireOptions{})
						if !assert.NoError(t, err) {
							return
						}
						tokens[h] = append(tokens[h], p.Token)
						if !assert.NoError(t, s.Release(ctx, p)) {
							return
						}
					}
				})
			}
			wg.Wait()
			seen := make(map[uint64]bool)
			for h, ts := range tokens {
				for i, tok := range ts {
					assert.False(t, seen[tok], "%s: token %d handed out twice", name, tok)
					seen[tok] = true
					assert.Greater(t, tok, uint64(0), name)
					if i > 0 {
						assert.Greater(t, tok, ts[i-1], "%s: handle %d", name, h)
					}
				}
			}
			assert.Len(t, seen, handles*rounds, name)
			last, err := procs[0].rdb.HGet(ctx, "rc:{"+name+"}:sem-fence", "n").Uint64()
			require.NoError(t, err)
			assert.Equal(t, slices.Max(slices.Collect(maps.Keys(seen))), last, "%s: the last token handed out went to a holder", name)
			if ahead {
				for tok := base + 1; tok <= base+handles*rounds; tok++ {
					assert.True(t, seen[tok], "token base+%d skipped", tok-base)
				}
			}
		}
	})
}

// Release: of a permit whose fixed lease ended, ErrLeaseLost (which
// matches ErrNotHeld); of a permit released already, or unknown,
// ErrNotHeld alone; of a zero Permit, ErrInvalidArgument without I/O.
func TestExpirableReleaseNotHeld(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx := context.Background()
		a, b := newExpProc(t, srv), newExpProc(t, srv)
		s, other := rsemaphore.NewExpirable(a.c, "x"), rsemaphore.NewExpirable(b.c, "x")
		require.NoError(t, s.SetPermits(ctx, 2))

		short := expAcquire(t, s, rsemaphore.AcquireOptions{Lease: 50 * time.Millisecond})
		expLost(t, short)
		locktest.Eventually(t, func() bool { _, acq := expCounts(t, s); return acq == 0 }, "the fixed lease ended in Redis")
		err := s.Release(ctx, short)
		assert.ErrorIs(t, err, redcoord.ErrLeaseLost)
		assert.ErrorIs(t, err, redcoord.ErrNotHeld)
		err = other.Release(ctx, short)
		assert.ErrorIs(t, err, redcoord.ErrLeaseLost, "another handle: the permit's Lost is closed")

		p := expAcquire(t, s, rsemaphore.AcquireOptions{})
		require.NoError(t, s.Release(ctx, p))
		for _, h := range []*rsemaphore.ExpirableSemaphore{s, other} {
			err = h.Release(ctx, p)
			assert.ErrorIs(t, err, redcoord.ErrNotHeld, "released twice")
			assert.NotErrorIs(t, err, redcoord.ErrLeaseLost, "released twice")
		}
		assert.False(t, locktest.IsClosed(p.Lost()), "Lost closed by Release")
		err = s.Release(ctx, rsemaphore.Permit{ID: "nobody"})
		assert.ErrorIs(t, err, redcoord.ErrNotHeld)
		assert.NotErrorIs(t, err, redcoord.ErrLeaseLost)

		a.rt.Reset()
		err = s.Release(ctx, rsemaphore.Permit{})
		expInvalid(t, err, "p", "Release of a zero Permit")
		assert.Zero(t, a.rt.Load(), "a zero Permit was sent to Redis")
		av, acq := expCounts(t, s)
		assert.Equal(t, [2]int64{2, 0}, [2]int64{av, acq})
	})
}

// expLost waits, at most 10s, for p's Lost to close.
func expLost(t *testing.T, p rsemaphore.Permit) {
	t.Helper()
	select {
	case <-p.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("Lost not closed within 10s")
	}
}

// go-redis re-sends an acquire or a release whose reply was lost with its
// connection, though Redis ran it: each is applied once. A retried release
// returns one permit, not two, and does not report ErrNotHeld; a retried
// acquire takes one permit and one token.
func TestExpirableRetriedRequestsApplyOnce(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx := context.Background()
		a := newExpProc(t, srv)
		s := rsemaphore.NewExpirable(a.c, "x")
		require.NoError(t, s.SetPermits(ctx, 2))
		require.NoError(t, s.Release(ctx, expAcquire(t, s, rsemaphore.AcquireOptions{}))) // load the scripts
		_, err := s.Acquired(ctx)
		require.NoError(t, err)
		const rounds = 50
		// A fence ahead of the server's clock hands out last + 1 (see
		// next_token in scripts/lib.lua): every token handed out is counted.
		token := uint64(1) << 52
		require.NoError(t, a.rdb.HSet(ctx, "rc:{x}:sem-fence", "n", token).Err())
		for i := range rounds {
			a.faults.DropReply(locktest.EvalSHA("xsem_acquire"))
			p1 := expAcquire(t, s, rsemaphore.AcquireOptions{})
			token++
			require.Equal(t, token, p1.Token, "round %d: a retried acquire took another token", i)
			p2 := expAcquire(t, s, rsemaphore.AcquireOptions{Lease: time.Hour})
			token++
			require.Equal(t, token, p2.Token, "round %d", i)
			av, acq := expCounts(t, s)
			require.Equal(t, [2]int64{0, 2}, [2]int64{av, acq}, "round %d: a retried acquire took two permits", i)

			a.faults.DropReply(locktest.EvalSHA("xsem_release"))
			require.NoError(t, s.Release(ctx, p1), "round %d: a retried release reported", i)
			av, acq = expCounts(t, s)
			require.Equal(t, [2]int64{1, 1}, [2]int64{av, acq}, "round %d: a retried release returned a permit twice", i)
			a.faults.DropReply(locktest.EvalSHA("xsem_release"))
			require.NoError(t, s.Release(ctx, p2), "round %d", i)
			av, acq = expCounts(t, s)
			require.Equal(t, [2]int64{2, 0}, [2]int64{av, acq}, "round %d", i)
		}
		assert.Equal(t, 3*rounds, a.faults.Fired(), "every injected fault fired")
	})
}

// Extend gives a permit a fixed lease, from any handle: a permit the
// watchdog kept is no longer renewed, and its Lost closes when the new
// lease ends. A permit that is gone is ErrNotHeld, or ErrLeaseLost when
// its lease ended.
func TestExpirableExtend(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx := context.Background()
		// Renewed every 100ms: were the watchdog still renewing the
		// extended permit, it would never end.
		a := newExpProc(t, srv, redcoord.WithLeaseTTL(300*time.Millisecond))
		s := rsemaphore.NewExpirable(a.c, "x")
		require.NoError(t, s.SetPermits(ctx, 2))

		kept := expAcquire(t, s, rsemaphore.AcquireOptions{})
		require.NoError(t, s.Extend(ctx, kept, 100*time.Millisecond))
		expLost(t, kept)
		locktest.Eventually(t, func() bool { _, acq := expCounts(t, s); return acq == 0 }, "the extended permit ended")
		err := s.Extend(ctx, kept, time.Second)
		assert.ErrorIs(t, err, redcoord.ErrLeaseLost)
		assert.ErrorIs(t, err, redcoord.ErrNotHeld)
		assert.ErrorIs(t, s.Release(ctx, kept), redcoord.ErrLeaseLost)

		fixed := expAcquire(t, s, rsemaphore.AcquireOptions{Lease: 100 * time.Millisecond})
		other := rsemaphore.NewExpirable(newExpProc(t, srv).c, "x")
		require.NoError(t, other.Extend(ctx, fixed, time.Hour), "any handle may extend a permit")
		require.NoError(t, s.Extend(ctx, fixed, time.Hour))
		require.NoError(t, s.Release(ctx, fixed))
		err = s.Extend(ctx, fixed, time.Second)
		assert.ErrorIs(t, err, redcoord.ErrNotHeld, "extended after release")
		assert.NotErrorIs(t, err, redcoord.ErrLeaseLost, "extended after release")
		err = other.Extend(ctx, rsemaphore.Permit{ID: "nobody"}, time.Second)
		assert.ErrorIs(t, err, redcoord.ErrNotHeld)
		assert.NotErrorIs(t, err, redcoord.ErrLeaseLost)
		assert.False(t, locktest.IsClosed(fixed.Lost()), "Lost closed by Release")
		av, acq := expCounts(t, s)
		assert.Equal(t, [2]int64{2, 0}, [2]int64{av, acq})
	})
}

// A wait that ends leaves the permits as they were and no waiter on the
// Client's Hub.
func TestExpirableCancelledAcquire(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx := context.Background()
		a, b := newExpProc(t, srv), newExpProc(t, srv)
		holder, s := rsemaphore.NewExpirable(a.c, "x"), rsemaphore.NewExpirable(b.c, "x")
		require.NoError(t, holder.SetPermits(ctx, 1))
		p := expAcquire(t, holder, rsemaphore.AcquireOptions{})
		hub, err := b.c.Hub()
		require.NoError(t, err)

		wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		_, err = s.Acquire(wctx, rsemaphore.AcquireOptions{})
		cancel()
		assert.ErrorIs(t, err, redcoord.ErrNotAcquired)
		assert.ErrorIs(t, err, context.DeadlineExceeded)

		wctx, cancel = context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := s.Acquire(wctx, rsemaphore.AcquireOptions{Lease: time.Hour})
			done <- err
		}()
		locktest.Eventually(t, func() bool { return hub.Stats().Waiters == 1 }, "the waiter is on the Hub")
		cancel()
		err = <-done
		assert.ErrorIs(t, err, redcoord.ErrNotAcquired)
		assert.ErrorIs(t, err, context.Canceled)

		assert.Zero(t, hub.Stats().Waiters, "a waiter left on the Hub")
		av, acq := expCounts(t, s)
		assert.Equal(t, [2]int64{0, 1}, [2]int64{av, acq})
		require.NoError(t, holder.Release(ctx, p))
		av, acq = expCounts(t, s)
		assert.Equal(t, [2]int64{1, 0}, [2]int64{av, acq}, "a given-up acquire took the released permit")
		require.NoError(t, holder.Release(ctx, expAcquire(t, s, rsemaphore.AcquireOptions{})))
	})
}
