package redcoord_test

import (
	"context"
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
)

// exclusive is a lock of a kind the hand-off test takes.
type exclusive interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
}

// A waiter woken by the release of a holder in another Client reports the
// hand-off (Woken) above zero and within its Wait; an acquire of a free
// lock reports none.
func TestObserverHandOff(t *testing.T) {
	srv := redistest.Real(t)
	for _, k := range []struct {
		kind string
		open func(c *redcoord.Client, name string) exclusive
	}{
		{"rlock", func(c *redcoord.Client, name string) exclusive { return rlock.New(c, name) }},
		{"rfairlock", func(c *redcoord.Client, name string) exclusive { return rfairlock.New(c, name) }},
		{"rrwlock", func(c *redcoord.Client, name string) exclusive { return rrwlock.New(c, name) }},
	} {
		t.Run(k.kind, func(t *testing.T) {
			ctx := context.Background()
			rdb := srv.Client(t)
			var ev events
			name := "handoff-" + k.kind
			waiter := k.open(locktest.NewClient(t, rdb, redcoord.WithObserver(ev.add)), name)
			holder := k.open(locktest.NewClient(t, rdb), name)

			require.NoError(t, waiter.Lock(ctx))
			require.NoError(t, waiter.Unlock(ctx))
			acq := ev.of(redcoord.Acquired)
			require.Len(t, acq, 1)
			assert.False(t, acq[0].Waited)
			assert.Zero(t, acq[0].Woken, "a free lock: no wait, no wake")

			// A release that comes before the waiter is registered lets its
			// own try take the lock (Woken 0): a few rounds, each with time
			// for the registration, make a woken one all but certain.
			var woken redcoord.Event
			for round := 0; round < 5 && woken.Woken == 0; round++ {
				require.NoError(t, holder.Lock(ctx))
				waits := len(ev.of(redcoord.Waiting))
				got := make(chan error, 1)
				go func() { got <- waiter.Lock(ctx) }()
				locktest.Eventually(t, func() bool { return len(ev.of(redcoord.Waiting)) > waits }, "the waiter waits")
				time.Sleep(100 * time.Millisecond) // its subscription and its registration
				released := time.Now()
				require.NoError(t, holder.Unlock(ctx))
				gotLock(t, got)
				sinceRelease := time.Since(released)
				require.NoError(t, waiter.Unlock(ctx))
				acq = ev.of(redcoord.Acquired)
				woken = acq[len(acq)-1]
				assert.True(t, woken.Waited)
				assert.LessOrEqual(t, woken.Woken, woken.Wait, "the hand-off is part of the wait")
				assert.LessOrEqual(t, woken.Woken, sinceRelease, "the wake came after the release began")
			}
			assert.Positive(t, woken.Woken, "a waiter woken by the release")
			t.Logf("wait %v, hand-off %v", woken.Wait, woken.Woken)
		})
	}
}

// A waiter that polls (WithPolling) hears no wake: the try that takes the
// lock is its own, and it reports no hand-off.
func TestObserverHandOffPolled(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Real(t).Client(t)
	var ev events
	waiter := rlock.New(locktest.NewClient(t, rdb, redcoord.WithObserver(ev.add), redcoord.WithPolling(5*time.Millisecond)),
		"handoff-polled")
	holder := rlock.New(locktest.NewClient(t, rdb), "handoff-polled")
	require.NoError(t, holder.Lock(ctx))
	got := make(chan error, 1)
	go func() { got <- waiter.Lock(ctx) }()
	locktest.Eventually(t, func() bool { return len(ev.of(redcoord.Waiting)) == 1 }, "the waiter waits")
	require.NoError(t, holder.Unlock(ctx))
	gotLock(t, got)
	acq := ev.of(redcoord.Acquired)
	require.Len(t, acq, 1)
	assert.True(t, acq[0].Waited)
	assert.Zero(t, acq[0].Woken, "a poll's try")
	require.NoError(t, waiter.Unlock(ctx))
}

// gotLock waits, up to 10s, for the waiter's Lock to return on got, and
// requires it returned no error.
func gotLock(t *testing.T, got <-chan error) {
	t.Helper()
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not get the lock")
	}
}
