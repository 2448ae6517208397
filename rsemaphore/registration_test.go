package rsemaphore_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/outage"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rsemaphore"
)

// semRegistry is the waiter registry of the semaphore "n".
const semRegistry = "rc:{n}:sem-waiters"

// semProcs starts n processes on one miniredis in the test's bubble, with
// go-redis options edited by edit (nil: none) for process i; the test's end
// stops them. Each Client polls at most every second (the default).
func semProcs(t *testing.T, n int, edit func(i int, o *redis.Options)) []*locktest.Proc {
	m, opts := redistest.Bubble()
	t.Cleanup(m.Close)
	ps := make([]*locktest.Proc, n)
	for i := range ps {
		o := *opts
		if edit != nil {
			edit(i, &o)
		}
		ps[i] = locktest.NewProc(t, &o)
		t.Cleanup(ps[i].Kill)
	}
	return ps
}

// semRegistered returns how many registrations the semaphore "n" has.
func semRegistered(t *testing.T, p *locktest.Proc) int64 {
	t.Helper()
	n, err := p.RDB.ZCard(context.Background(), semRegistry).Result()
	require.NoError(t, err)
	return n
}

// semHandOff releases a permit of s and returns how long, on the bubble's
// clock, the live waiter whose Acquire ends on acquired takes to get it.
func semHandOff(t *testing.T, s *rsemaphore.Semaphore, acquired <-chan time.Time) time.Duration {
	t.Helper()
	released := time.Now()
	require.NoError(t, s.Release(context.Background(), 1))
	select {
	case at := <-acquired:
		return at.Sub(released)
	case <-time.After(time.Minute):
		t.Fatal("the live waiter did not get the permit")
		return 0
	}
}

// lostReply runs acquire, whose first try's reply is dropped (its
// connection closed: EOF, at once), with a context that ends in the pause
// before that try is sent again (at least outage.FirstBackoff/2).
func lostReply(t *testing.T, acquire func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), outage.FirstBackoff/5)
	defer cancel()
	err := acquire(ctx)
	require.ErrorIs(t, err, redcoord.ErrNotAcquired)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "EOF", "the error names the lost reply")
}

// semAcquireAt runs s.Acquire of one permit in a goroutine and returns a
// channel that receives when it returned, on the bubble's clock.
func semAcquireAt(t *testing.T, s *rsemaphore.Semaphore) <-chan time.Time {
	at := make(chan time.Time, 1)
	go func() {
		assert.NoError(t, s.Acquire(context.Background(), 1))
		at <- time.Now()
	}()
	return at
}

// A registering try whose reply is lost, and not retried by go-redis, is
// sent again after a pause; an Acquire whose context ends in that pause
// fails. Redis applied the try: the leave after it unregisters the
// request, so that the next release wakes the live waiter at once.
func TestLostRegisteringTryUnregisters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ps := semProcs(t, 3, func(i int, o *redis.Options) {
			if i == 1 {
				o.MaxRetries = -1 // the lost reply is the Acquire's error
			}
		})
		hp, wp, lp := ps[0], ps[1], ps[2]
		holder, waiter, live := rsemaphore.New(hp.C, "n"), rsemaphore.New(wp.C, "n"), rsemaphore.New(lp.C, "n")
		_, err := holder.TrySetPermits(ctx, 1)
		require.NoError(t, err)
		require.NoError(t, holder.Acquire(ctx, 1)) // loads the script: the waiter's try is an EVALSHA Redis runs

		wp.Faults.DropReply(locktest.EvalSHA("sem_acquire"))
		lostReply(t, func(ctx context.Context) error { return waiter.Acquire(ctx, 1) })
		require.Equal(t, 1, wp.Faults.Fired())
		assert.Zero(t, semRegistered(t, hp), "the failed Acquire left its registration")

		time.Sleep(time.Millisecond)
		acquired := semAcquireAt(t, live)
		synctest.Wait()
		require.Equal(t, int64(1), semRegistered(t, hp))
		assert.Zero(t, semHandOff(t, holder, acquired), "the release must wake the live waiter at once")
		require.NoError(t, live.Release(ctx, 1))
	})
}

// The same for an ExpirableSemaphore.
func TestLostRegisteringTryUnregistersExpirable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ps := semProcs(t, 3, func(i int, o *redis.Options) {
			if i == 1 {
				o.MaxRetries = -1 // the lost reply is the Acquire's error
			}
		})
		hp, wp, lp := ps[0], ps[1], ps[2]
		holder, waiter, live := rsemaphore.NewExpirable(hp.C, "n"), rsemaphore.NewExpirable(wp.C, "n"), rsemaphore.NewExpirable(lp.C, "n")
		_, err := holder.TrySetPermits(ctx, 1)
		require.NoError(t, err)
		held, err := holder.Acquire(ctx, rsemaphore.AcquireOptions{}) // loads the script
		require.NoError(t, err)
		registered := func() int64 { return hp.RDB.ZCard(ctx, "rc:{n}:xsem-waiters").Val() }

		wp.Faults.DropReply(locktest.EvalSHA("xsem_acquire"))
		lostReply(t, func(ctx context.Context) error {
			_, err := waiter.Acquire(ctx, rsemaphore.AcquireOptions{})
			return err
		})
		require.Equal(t, 1, wp.Faults.Fired())
		assert.Zero(t, registered(), "the failed Acquire left its registration")

		time.Sleep(time.Millisecond)
		type got struct {
			p  rsemaphore.Permit
			at time.Time
		}
		acquired := make(chan got, 1)
		go func() {
			p, err := live.Acquire(ctx, rsemaphore.AcquireOptions{})
			assert.NoError(t, err)
			acquired <- got{p, time.Now()}
		}()
		synctest.Wait()
		require.Equal(t, int64(1), registered())
		released := time.Now()
		require.NoError(t, holder.Release(ctx, held))
		select {
		case g := <-acquired:
			assert.Zero(t, g.at.Sub(released), "the release must wake the live waiter at once")
			require.NoError(t, live.Release(ctx, g.p))
		case <-time.After(time.Minute):
			t.Fatal("the live waiter did not get a permit")
		}
	})
}

// A wait whose subscription is never confirmed polls; its first try had
// registered it. Its first poll drops that registration, and the
// heartbeat stops, so that a release wakes the live waiter at once.
func TestDeafSemaphoreWaitUnregisters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ps := semProcs(t, 3, nil)
		hp, wp, lp := ps[0], ps[1], ps[2]
		holder, waiter, live := rsemaphore.New(hp.C, "n"), rsemaphore.New(wp.C, "n"), rsemaphore.New(lp.C, "n")
		_, err := holder.TrySetPermits(ctx, 1)
		require.NoError(t, err)
		semDeafen(t, hp, wp)
		require.NoError(t, holder.Acquire(ctx, 1))
		waited := make(chan error, 1)
		go func() { waited <- waiter.Acquire(ctx, 1) }()
		synctest.Wait()
		require.Equal(t, int64(1), semRegistered(t, hp), "the first try registered")
		time.Sleep(1500 * time.Millisecond) // the subscription is given up: the wait polls
		assert.Zero(t, semRegistered(t, hp), "a wait that cannot hear a wake stays registered")
		assert.Zero(t, semWatched(wp.C), "the registration's heartbeat runs on")

		time.Sleep(time.Millisecond)
		acquired := semAcquireAt(t, live)
		synctest.Wait()
		assert.Zero(t, semHandOff(t, holder, acquired), "the release must wake the live waiter at once")
		require.NoError(t, live.Release(ctx, 1))
		require.NoError(t, <-waited, "the polling waiter gets a permit on its timer")
		require.NoError(t, waiter.Release(ctx, 1))
	})
}

// semDeafen opens the Hub connection of process p with one wait on
// another semaphore (h holds its permit meanwhile), then blackholes it:
// p's next subscription is never confirmed.
func semDeafen(t *testing.T, h, p *locktest.Proc) {
	ctx := context.Background()
	hs, ps := rsemaphore.New(h.C, "warm"), rsemaphore.New(p.C, "warm")
	_, err := hs.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, hs.Acquire(ctx, 1))
	done := make(chan error)
	go func() { done <- ps.Acquire(ctx, 1) }()
	synctest.Wait()
	require.NoError(t, hs.Release(ctx, 1))
	require.NoError(t, <-done)
	require.NoError(t, ps.Release(ctx, 1))
	p.Faults.Blackhole()
}

// semWatched returns how many leases c's watchdog renews.
func semWatched(c *redcoord.Client) int { return core.Of(c).Watchdog.Len() }
