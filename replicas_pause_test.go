package redcoord_test

import (
	"context"
	"errors"
	"testing"
	"time"

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

// pauseTimeout is WAIT's timeout in the tests with a paused replica.
const pauseTimeout = 200 * time.Millisecond

// A replica that stops acknowledging (paused by SIGSTOP) makes an acquire
// fail with ErrNotReplicated after the timeout, leaving the lock free, and
// a release stand but report ErrNotReplicated. Once the replica runs
// again, acquires succeed.
func TestWaitReplicasPausedReplica(t *testing.T) {
	ctx := context.Background()
	pair := redistest.StartReplicated(t)
	rdb := pair.Primary.Client(t)
	c := locktest.NewClient(t, rdb, redcoord.WithWaitReplicas(1, pauseTimeout))
	holder, other := rlock.New(c, "paused"), rlock.New(c, "paused")
	acked(t, func() error { return holder.Lock(ctx) })

	pair.PauseReplica(t)
	err := holder.Unlock(ctx)
	assert.ErrorIs(t, err, redcoord.ErrNotReplicated)
	assert.NotErrorIs(t, err, redcoord.ErrNotHeld)
	locked, err := holder.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked, "the release stands")

	start := time.Now()
	err = other.Lock(ctx)
	assert.ErrorIs(t, err, redcoord.ErrNotReplicated)
	assert.ErrorIs(t, err, redcoord.ErrNotAcquired)
	assert.GreaterOrEqual(t, time.Since(start), pauseTimeout)
	assert.Less(t, time.Since(start), 5*pauseTimeout, "returned, not waited on")
	locked, err = other.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked, "the acquire was undone")
	assert.Zero(t, other.Token())

	pair.ResumeReplica(t)
	acked(t, func() error { return other.Lock(ctx) })
	stands(t, other.Unlock(ctx))
}

// An Extend that the paused replica does not acknowledge stands: it says
// ErrNotReplicated, and the hold keeps its new lease and is not lost.
func TestWaitReplicasPausedExtend(t *testing.T) {
	ctx := context.Background()
	pair := redistest.StartReplicated(t)
	rdb := pair.Primary.Client(t)
	c := locktest.NewClient(t, rdb, redcoord.WithWaitReplicas(1, pauseTimeout))
	w, r := rrwlock.New(c, "paused-w"), rrwlock.New(c, "paused-r")
	m := rlock.New(c, "paused-m")
	acked(t, func() error { return m.Lock(ctx) })
	acked(t, func() error { return w.Lock(ctx) })
	acked(t, func() error { return r.RLock(ctx) })

	pair.PauseReplica(t)
	defer pair.ResumeReplica(t)
	for _, x := range []struct {
		name   string
		extend func() error
		lost   <-chan struct{}
		key    string
	}{
		{"rlock", func() error { return m.Extend(ctx, time.Minute) }, m.Lost(), "rc:{paused-m}:lock"},
		{"rrwlock write", func() error { return w.Extend(ctx, time.Minute) }, w.Lost(), "rc:{paused-w}:lock"},
		{"rrwlock read", func() error { return r.RExtend(ctx, time.Minute) }, r.RLost(), "rc:{paused-r}:leases"},
	} {
		err := x.extend()
		assert.ErrorIs(t, err, redcoord.ErrNotReplicated, x.name)
		assert.NotErrorIs(t, err, redcoord.ErrLeaseLost, x.name)
		assert.ErrorContains(t, err, "the new lease stands", x.name)
		assert.False(t, locktest.IsClosed(x.lost), "%s: not lost", x.name)
		assert.Greater(t, rdb.PTTL(ctx, x.key).Val(), 50*time.Second, "%s: the new lease", x.name)
	}
}

// A lock or permits that a release hands to a queued waiter inside its
// script are the releaser's write, which its WAIT covered or not: the
// waiter confirms with a write and WAIT of its own, and a shortfall undoes
// the grant (the lock free, the permits back) and fails the waiter's
// acquire with ErrNotReplicated.
func TestWaitReplicasPausedGrant(t *testing.T) {
	// Bounded: a waiter that wrongly acquires makes the next Lock of its
	// handle wait for its Unlock.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pair := redistest.StartReplicated(t)
	rdb := pair.Primary.Client(t)
	holderC := locktest.NewClient(t, rdb, redcoord.WithWaitReplicas(1, pauseTimeout))
	waiterC := locktest.NewClient(t, rdb, redcoord.WithWaitReplicas(1, pauseTimeout))

	t.Run("rfairlock", func(t *testing.T) {
		holder, waiter := rfairlock.New(holderC, "grant"), rfairlock.New(waiterC, "grant")
		acked(t, func() error { return holder.Lock(ctx) })
		got := background(func() error { return waiter.Lock(ctx) })
		locktest.Eventually(t, func() bool { n, _ := holder.QueueLength(ctx); return n == 1 }, "the waiter queues")

		pair.PauseReplica(t)
		assert.ErrorIs(t, holder.Unlock(ctx), redcoord.ErrNotReplicated, "the release (and grant) stands")
		err := <-got
		assert.ErrorIs(t, err, redcoord.ErrNotReplicated)
		assert.ErrorIs(t, err, redcoord.ErrNotAcquired)
		locked, err := holder.IsLocked(ctx)
		require.NoError(t, err)
		assert.False(t, locked, "the grant was given back")
		n, err := holder.QueueLength(ctx)
		require.NoError(t, err)
		assert.Zero(t, n)

		pair.ResumeReplica(t)
		acked(t, func() error { return waiter.Lock(ctx) })
		stands(t, waiter.Unlock(ctx))
	})

	t.Run("Semaphore WithFair", func(t *testing.T) {
		holder := rsemaphore.New(holderC, "grant-sem", rsemaphore.WithFair())
		waiter := rsemaphore.New(waiterC, "grant-sem", rsemaphore.WithFair())
		require.NoError(t, holder.SetPermits(ctx, 1))
		acked(t, func() error { return holder.Acquire(ctx, 1) })
		got := background(func() error { return waiter.Acquire(ctx, 1) })
		locktest.Eventually(t, func() bool { st, _ := holder.State(ctx); return st.Waiting == 1 }, "the waiter queues")

		pair.PauseReplica(t)
		assert.ErrorIs(t, holder.Release(ctx, 1), redcoord.ErrNotReplicated, "the release (and grant) stands")
		err := <-got
		assert.ErrorIs(t, err, redcoord.ErrNotReplicated)
		assert.ErrorIs(t, err, redcoord.ErrNotAcquired)
		st, err := holder.State(ctx)
		require.NoError(t, err)
		assert.Equal(t, rsemaphore.State{Set: true, Available: 1, Total: 1}, st, "the grant was given back")

		pair.ResumeReplica(t)
		acked(t, func() error { return waiter.Acquire(ctx, 1) })
		stands(t, waiter.Release(ctx, 1))
	})
}

// background runs f in a goroutine and returns the channel of its error.
func background(f func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	return ch
}

// acked runs acquire until the replica acknowledges it, at most 10 times:
// on a busy machine a running replica can miss WAIT's short timeout, and
// an acquire it missed was undone, so it may be tried again.
func acked(t *testing.T, acquire func() error) {
	t.Helper()
	var err error
	for range 10 {
		if err = acquire(); !errors.Is(err, redcoord.ErrNotReplicated) {
			break
		}
		t.Logf("acquire not acknowledged in %v with the replica running; again", pauseTimeout)
	}
	require.NoError(t, err)
}

// stands checks a release with the replica running: it succeeds, or too
// few replicas acknowledged it in time, and then it stands all the same.
func stands(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, redcoord.ErrNotReplicated) {
		t.Logf("release not acknowledged in %v with the replica running: %v", pauseTimeout, err)
		return
	}
	require.NoError(t, err)
}
