package redcoord_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/pubsub"
	"github.com/redcoord/redcoord/relection"
	"github.com/redcoord/redcoord/rfairlock"
	"github.com/redcoord/redcoord/rlatch"
	"github.com/redcoord/redcoord/rlock"
	"github.com/redcoord/redcoord/rrwlock"
	"github.com/redcoord/redcoord/rsemaphore"
)

// outageDown is how long Redis stays down in the outage tests: far longer
// than go-redis's own retries of a command ride out, so that every wait's
// tries fail for a while.
const outageDown = 1500 * time.Millisecond

// blockedWait is one blocking call of a waiter Client, blocked by a holder
// Client until release.
type blockedWait struct {
	name    string
	wait    func(ctx context.Context) error // returns once it holds (or the wait ends)
	release func(ctx context.Context) error // the holder's release, or the change the wait waits for
	done    func(ctx context.Context) error // the waiter's release, after wait returned nil
}

// blockedWaits blocks a wait of every kind, the waiter's on waiterC, the
// holder's on holderC; data says whether the state that the holders' kinds
// need beyond a lock survives the outage (a semaphore's permits, a latch's
// count): without persistence only the locks and pubsub are waited for.
func blockedWaits(t *testing.T, holderC, waiterC *redcoord.Client, rdb *redis.Client, data bool) []blockedWait {
	t.Helper()
	ctx := context.Background()
	var all []blockedWait

	lh, lw := rlock.New(holderC, "o-rlock"), rlock.New(waiterC, "o-rlock")
	require.NoError(t, lh.Lock(ctx))
	all = append(all, blockedWait{"rlock Lock", lw.Lock, lh.Unlock, lw.Unlock})

	fh, fw := rfairlock.New(holderC, "o-rfairlock"), rfairlock.New(waiterC, "o-rfairlock")
	require.NoError(t, fh.Lock(ctx))
	all = append(all, blockedWait{"rfairlock Lock", fw.Lock, fh.Unlock, fw.Unlock})

	wh, ww := rrwlock.New(holderC, "o-rw-write"), rrwlock.New(waiterC, "o-rw-write")
	require.NoError(t, wh.RLock(ctx))
	all = append(all, blockedWait{"rrwlock Lock", ww.Lock, wh.RUnlock, ww.Unlock})

	rh, rw := rrwlock.New(holderC, "o-rw-read"), rrwlock.New(waiterC, "o-rw-read")
	require.NoError(t, rh.Lock(ctx))
	all = append(all, blockedWait{"rrwlock RLock", rw.RLock, rh.Unlock, rw.RUnlock})

	eh, ew := relection.New(holderC, "o-election"), relection.New(waiterC, "o-election")
	require.NoError(t, eh.Campaign(ctx, "holder"))
	all = append(all, blockedWait{"relection Campaign", func(ctx context.Context) error { return ew.Campaign(ctx, "waiter") },
		eh.Resign, ew.Resign})

	mh, mw := rlock.New(holderC, "o-multi-b"), rlock.NewMulti(waiterC, []string{"o-multi-a", "o-multi-b"})
	require.NoError(t, mh.Lock(ctx))
	all = append(all, blockedWait{"MultiMutex Lock", mw.Lock, mh.Unlock, mw.Unlock})

	hub, err := waiterC.Hub()
	require.NoError(t, err)
	var set atomic.Bool // the condition is in the test's memory: it survives any restart
	check := func(ctx context.Context) (bool, error) {
		if err := rdb.Ping(ctx).Err(); err != nil { // a check that needs Redis
			return false, err
		}
		return set.Load(), nil
	}
	all = append(all, blockedWait{"pubsub Hub Wait", func(ctx context.Context) error { return hub.Wait(ctx, "o-pubsub", check) },
		func(ctx context.Context) error { set.Store(true); return pubsub.Publish(ctx, rdb, "o-pubsub", "*") },
		func(context.Context) error { return nil }})
	if !data {
		return all
	}

	sh, sw := rsemaphore.New(holderC, "o-sem"), rsemaphore.New(waiterC, "o-sem")
	_, err = sh.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, sh.Acquire(ctx, 1))
	all = append(all, blockedWait{"rsemaphore Acquire", func(ctx context.Context) error { return sw.Acquire(ctx, 1) },
		func(ctx context.Context) error { return sh.Release(ctx, 1) },
		func(ctx context.Context) error { return sw.Release(ctx, 1) }})

	xh, xw := rsemaphore.NewExpirable(holderC, "o-xsem"), rsemaphore.NewExpirable(waiterC, "o-xsem")
	_, err = xh.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	hp, err := xh.Acquire(ctx, rsemaphore.AcquireOptions{})
	require.NoError(t, err)
	var wp rsemaphore.Permit
	all = append(all, blockedWait{"ExpirableSemaphore Acquire",
		func(ctx context.Context) (err error) {
			wp, err = xw.Acquire(ctx, rsemaphore.AcquireOptions{})
			return err
		},
		func(ctx context.Context) error { return xh.Release(ctx, hp) },
		func(ctx context.Context) error { return xw.Release(ctx, wp) }})

	latch := rlatch.New(holderC, "o-latch")
	_, err = latch.TrySetCount(ctx, 1)
	require.NoError(t, err)
	all = append(all, blockedWait{"rlatch Wait", rlatch.New(waiterC, "o-latch").Wait, latch.CountDown,
		func(context.Context) error { return nil }})
	return all
}

// Redis killed in the middle of every kind of blocked wait, and restarted
// on the same port: each wait rides out the outage and returns nil once
// what it waits for is released. Without persistence the locks are free
// after the restart; with appendonly the holders still hold them, and
// release them. Meanwhile a TryLock fails at once, and a Lock whose
// context ends during the outage says why and names the last failure.
func TestOutageBlockedWaits(t *testing.T) {
	t.Run("without persistence", func(t *testing.T) { outage(t, false) })
	t.Run("appendonly always", func(t *testing.T) { outage(t, true) })
}

func outage(t *testing.T, persist bool) {
	ctx := context.Background()
	var args []string
	if persist {
		args = []string{"--appendonly", "yes", "--appendfsync", "always"}
	}
	srv := redistest.StartRestartable(t, args...)
	var retries atomic.Int64
	opts := []redcoord.Option{redcoord.WithLeaseTTL(10 * time.Second), redcoord.WithMaxPollInterval(200 * time.Millisecond)}
	rdb := srv.Client(t)
	holderC := locktest.NewClient(t, rdb, opts...)
	waiterC := locktest.NewClient(t, srv.Client(t), append(opts, redcoord.WithObserver(func(e redcoord.Event) {
		if e.Kind == redcoord.Retrying {
			retries.Add(1)
		}
	}))...)
	all := blockedWaits(t, holderC, waiterC, rdb, persist)

	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	results := make([]chan error, len(all))
	for i, w := range all {
		results[i] = make(chan error, 1)
		go func() { results[i] <- w.wait(wctx) }()
	}
	hub, err := waiterC.Hub()
	require.NoError(t, err)
	locktest.Eventually(t, func() bool { return hub.Stats().Waiters >= len(all) }, "every wait is blocked")

	srv.Kill(t)
	down := time.Now()

	other := rlock.New(holderC, "o-rlock")
	ok, err := other.TryLock(ctx)
	assert.False(t, ok)
	assert.Error(t, err, "TryLock fails at once while Redis is down")
	assert.NotErrorIs(t, err, redcoord.ErrNotAcquired, "with Redis's error, not a wait's")

	// A name no wait of waiterC is blocked on: a Lock where the Client's
	// waiters already wait joins their local queue without a try of its
	// own, so it would have no failure to name.
	// Its context leaves it time for a whole try (go-redis retries a
	// refused dial with a backoff first) and ends before the restart.
	late := rlock.New(waiterC, "o-late")
	dctx, dcancel := context.WithTimeout(ctx, time.Second)
	err = late.Lock(dctx)
	dcancel()
	require.ErrorIs(t, err, redcoord.ErrNotAcquired)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "connection refused", "the error names the last failure")
	t.Logf("a Lock whose context ended during the outage: %v", err)

	time.Sleep(time.Until(down.Add(outageDown)))
	for i, w := range all {
		select {
		case err := <-results[i]:
			t.Fatalf("%s returned during the outage: %v", w.name, err)
		default:
		}
	}
	srv.Restart(t)
	assert.Positive(t, retries.Load(), "the waits reported their failed tries")

	for _, w := range all {
		err := w.release(ctx)
		if persist {
			require.NoError(t, err, "%s: the holder releases", w.name)
		}
	}
	for i, w := range all {
		require.NoError(t, <-results[i], "%s rides out the outage", w.name)
		require.NoError(t, w.done(ctx), "%s: the waiter releases", w.name)
	}
}
