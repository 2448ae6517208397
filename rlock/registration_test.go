package rlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
)

// registry is the waiter registry of the lock "n".
const registry = "rc:{n}:waiters"

// procs starts n processes on one miniredis in the test's bubble, with
// go-redis options edited by edit (nil: none) for process i; the test's end
// stops them. Each Client polls at most every second (the default).
func procs(t *testing.T, n int, edit func(i int, o *redis.Options)) []*locktest.Proc {
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

// registered returns how many registrations the lock "n" has.
func registered(t *testing.T, p *locktest.Proc) int64 {
	t.Helper()
	n, err := p.RDB.ZCard(context.Background(), registry).Result()
	require.NoError(t, err)
	return n
}

// handOff unlocks m and returns how long, on the bubble's clock, the live
// waiter whose Lock ends on acquired takes to get the lock after it.
func handOff(t *testing.T, m *rlock.Mutex, acquired <-chan time.Time) time.Duration {
	t.Helper()
	released := time.Now()
	require.NoError(t, m.Unlock(context.Background()))
	select {
	case at := <-acquired:
		return at.Sub(released)
	case <-time.After(time.Minute):
		t.Fatal("the live waiter did not get the lock")
		return 0
	}
}

// lockAt runs m.Lock in a goroutine and returns a channel that receives
// when it returned, on the bubble's clock.
func lockAt(t *testing.T, m *rlock.Mutex) <-chan time.Time {
	at := make(chan time.Time, 1)
	go func() {
		assert.NoError(t, m.Lock(context.Background()))
		at <- time.Now()
	}()
	return at
}

// A registering try whose reply is lost registers the request; go-redis's
// retry of it finds the lock free and takes it. The hold leaves no
// registration behind: the holder's own release must wake the live
// waiter, not the request that holds the lock.
func TestRetriedTryThatTakesTheLockUnregisters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ps := procs(t, 3, func(i int, o *redis.Options) {
			if i == 1 {
				o.MinRetryBackoff, o.MaxRetryBackoff = 100*time.Millisecond, 100*time.Millisecond
			}
		})
		hp, wp, lp := ps[0], ps[1], ps[2]
		holder, waiter, live := rlock.New(hp.C, "n"), rlock.New(wp.C, "n"), rlock.New(lp.C, "n")
		require.NoError(t, holder.Lock(ctx)) // loads the script: the waiter's try is an EVALSHA Redis runs
		// A crashed process's registration, as fresh as a live one (renewed
		// just before the crash), comes first, so that the holder's release
		// wakes it, and the waiter's retry finds the lock free.
		dead := redis.Z{Score: float64(time.Now().Add(29 * time.Second).UnixMilli()), Member: "crashed:1:1"}
		require.NoError(t, hp.RDB.ZAdd(ctx, registry, dead).Err())

		wp.Faults.DropReply(locktest.EvalSHA("lock_acquire"))
		waited := make(chan error, 1)
		go func() { waited <- waiter.Lock(ctx) }()
		synctest.Wait() // the try registered the waiter; its reply was lost, go-redis backs off
		require.Equal(t, 1, wp.Faults.Fired())
		time.Sleep(time.Millisecond) // the live waiter registers after it
		acquired := lockAt(t, live)
		synctest.Wait()
		require.Equal(t, int64(3), registered(t, hp))

		require.NoError(t, holder.Unlock(ctx)) // wakes the crashed registration
		require.NoError(t, <-waited, "the retry takes the free lock")
		assert.Equal(t, int64(1), registered(t, hp), "only the live waiter is registered")
		assert.Zero(t, handOff(t, waiter, acquired), "the release must wake the live waiter at once")
		assert.Zero(t, registered(t, hp))
		require.NoError(t, live.Unlock(ctx))
	})
}

// A wait whose subscription is never confirmed polls; its first try had
// registered it. When it takes the lock it leaves no registration behind,
// so that its release wakes the live waiter at once.
func TestDeafWaitThatTakesTheLockUnregisters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ps := procs(t, 3, nil)
		hp, wp, lp := ps[0], ps[1], ps[2]
		deafen(t, hp, wp)
		holder, waiter, live := rlock.New(hp.C, "n"), rlock.New(wp.C, "n"), rlock.New(lp.C, "n")
		require.NoError(t, holder.LockWithLease(ctx, 3*time.Second)) // never released: it runs out
		waited := make(chan error, 1)
		go func() { waited <- waiter.Lock(ctx) }()
		synctest.Wait()
		require.Equal(t, int64(1), registered(t, hp), "the first try registered")

		require.NoError(t, <-waited, "the polling wait takes the lock once the lease ran out")
		assert.Zero(t, registered(t, hp), "the hold left its registration behind")
		assert.Equal(t, 1, watched(wp.C), "the hold is renewed, and nothing else")
		acquired := lockAt(t, live)
		synctest.Wait()
		assert.Zero(t, handOff(t, waiter, acquired), "the release must wake the live waiter at once")
		require.NoError(t, live.Unlock(ctx))
	})
}

// deafen opens the Hub connection of process p with one wait (h holds the
// lock meanwhile), then blackholes it: p's next subscription is never
// confirmed.
func deafen(t *testing.T, h, p *locktest.Proc) {
	ctx := context.Background()
	hm, pm := rlock.New(h.C, "warm"), rlock.New(p.C, "warm")
	require.NoError(t, hm.Lock(ctx))
	done := make(chan error)
	go func() { done <- pm.Lock(ctx) }()
	synctest.Wait()
	require.NoError(t, hm.Unlock(ctx))
	require.NoError(t, <-done)
	require.NoError(t, pm.Unlock(ctx))
	p.Faults.Blackhole()
}

// A Client is registered once for all its local waiters of a name: one
// that gives up leaves the registration to the others, and the last one
// takes it away.
func TestLocalWaitersLeaveOneByOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ps := procs(t, 2, nil)
		hp, wp := ps[0], ps[1]
		holder := rlock.New(hp.C, "n")
		require.NoError(t, holder.Lock(ctx))
		var cancels [2]context.CancelFunc
		var ended [2]chan error
		for i := range cancels {
			wctx, cancel := context.WithCancel(ctx)
			cancels[i], ended[i] = cancel, make(chan error, 1)
			m := rlock.New(wp.C, "n")
			go func() { ended[i] <- m.Lock(wctx) }()
			synctest.Wait()
		}
		require.Equal(t, int64(1), registered(t, hp), "one registration for the Client")
		cancels[0]()
		require.ErrorIs(t, <-ended[0], context.Canceled)
		assert.Equal(t, int64(1), registered(t, hp), "the Client stays registered for the other waiter")
		cancels[1]()
		require.ErrorIs(t, <-ended[1], context.Canceled)
		assert.Zero(t, registered(t, hp), "the last waiter's registration went with it")
		require.NoError(t, holder.Unlock(ctx))
	})
}
