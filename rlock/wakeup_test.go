package rlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
)

// Blackhole modes for handoff.
const (
	delivering = iota
	deadAfterSubscribe
	deadBeforeSubscribe
)

// pair is a holder's process and a waiter's, on one miniredis in a
// bubble; the waiter's connections pass through faults.
type pair struct {
	holderRDB *redis.Client
	hc, wc    *redcoord.Client // the waiter's polls at most every poll
	faults    *redistest.Faults
}

// newPair starts a pair in the test's bubble; the test's end closes it.
func newPair(t *testing.T, poll time.Duration) *pair {
	m, opts := redistest.Bubble()
	t.Cleanup(m.Close)
	p := &pair{holderRDB: redis.NewClient(opts), faults: redistest.NewFaults()}
	t.Cleanup(func() { _ = p.holderRDB.Close() })
	wopts := *opts
	wopts.Dialer = p.faults.Dialer(opts.Dialer)
	waiterRDB := redis.NewClient(&wopts)
	t.Cleanup(func() { _ = waiterRDB.Close() })
	var err error
	p.hc, err = redcoord.New(p.holderRDB)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.hc.Close(context.Background()) })
	p.wc, err = redcoord.New(waiterRDB, redcoord.WithMaxPollInterval(poll))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.wc.Close(context.Background()) })
	return p
}

// killHub opens the waiter's Hub connection with one wait, then blackholes
// it: the waiter's next subscription is never confirmed.
func (p *pair) killHub(t *testing.T) {
	ctx := context.Background()
	h, w := rlock.New(p.hc, "warm"), rlock.New(p.wc, "warm")
	require.NoError(t, h.Lock(ctx))
	done := make(chan error)
	go func() { done <- w.Lock(ctx) }()
	synctest.Wait()
	require.NoError(t, h.Unlock(ctx))
	require.NoError(t, <-done)
	require.NoError(t, w.Unlock(ctx))
	synctest.Wait() // the Client's own channel, kept since its first hold, is confirmed
	p.faults.Blackhole()
}

// handoff measures, on the bubble's clock, how long a waiter in another
// process takes to get the lock after its holder unlocks, with the waiter's
// subscriber connection delivering, or blackholed after or before the
// waiter subscribed.
func handoff(t *testing.T, mode int, poll time.Duration) time.Duration {
	var gap time.Duration
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		p := newPair(t, poll)
		hc, wc, faults := p.hc, p.wc, p.faults
		if mode == deadBeforeSubscribe {
			p.killHub(t)
		}
		holder, waiter := rlock.New(hc, "n"), rlock.New(wc, "n")
		require.NoError(t, holder.Lock(ctx))
		acquired := make(chan time.Time, 1)
		go func() {
			assert.NoError(t, waiter.Lock(ctx))
			acquired <- time.Now()
		}()
		synctest.Wait() // the waiter is subscribed (or subscribing) and sleeping
		hub, err := wc.Hub()
		require.NoError(t, err)
		require.Equal(t, 1, hub.Stats().Waiters)
		if mode == deadAfterSubscribe {
			faults.Blackhole()
		}
		time.Sleep(poll / 3) // release between two of the waiter's checks
		released := time.Now()
		require.NoError(t, holder.Unlock(ctx))
		gap = (<-acquired).Sub(released)
		require.NoError(t, waiter.Unlock(ctx))
		faults.Unblackhole()
	})
	return gap
}

// Pub/sub is a hint: with the subscriber connection blackholed while the
// holder unlocks, the waiter still gets the lock within one poll interval;
// likewise when the connection was dead before the waiter subscribed (its
// subscription is never confirmed).
func TestLostWakeUpCostsAtMostOnePollInterval(t *testing.T) {
	const poll = 2 * time.Second
	woken := handoff(t, delivering, poll)
	lost := handoff(t, deadAfterSubscribe, poll)
	dead := handoff(t, deadBeforeSubscribe, poll)
	t.Logf("virtual hand-off: notified %v, notification lost %v, connection dead before subscribing %v (poll interval %v)",
		woken, lost, dead, poll)
	assert.Zero(t, woken, "a delivered notification wakes the waiter at once")
	assert.Greater(t, lost, time.Duration(0), "the notification was not lost: the test proves nothing")
	assert.LessOrEqual(t, lost, poll, "a lost notification must cost at most one poll interval")
	assert.Greater(t, dead, time.Duration(0))
	assert.LessOrEqual(t, dead, poll, "a dead subscriber connection must cost at most one poll interval")
}

// The same on a real server: the blackholed waiter still acquires.
func TestLostWakeUpRealServer(t *testing.T) {
	srv := redistest.Real(t)
	faults := redistest.NewFaults()
	holderRDB := srv.Client(t)
	waiterRDB := srv.Client(t, func(o *redis.Options) { o.Dialer = faults.Dialer(nil) })
	ctx := context.Background()
	const poll = 200 * time.Millisecond
	holder := rlock.New(locktest.NewClient(t, holderRDB), "n")
	wc := locktest.NewClient(t, waiterRDB, redcoord.WithMaxPollInterval(poll))
	waiter := rlock.New(wc, "n")
	require.NoError(t, holder.Lock(ctx))
	acquired := make(chan error, 1)
	go func() { acquired <- waiter.Lock(ctx) }()
	locktest.Eventually(t, func() bool {
		hub, err := wc.Hub()
		return err == nil && hub.Stats().Waiters == 1
	}, "waiter subscribed")
	faults.Blackhole()
	defer faults.Unblackhole()
	released := time.Now()
	require.NoError(t, holder.Unlock(ctx))
	select {
	case err := <-acquired:
		require.NoError(t, err)
		t.Logf("acquired %v after the release, poll interval %v", time.Since(released), poll)
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was stranded by a lost notification")
	}
	require.NoError(t, waiter.Unlock(ctx))
}

// Where an ACL refuses SUBSCRIBE, waiters fall back to polling by themselves.
func TestSubscribeRefusedFallsBackToPolling(t *testing.T) {
	srv := redistest.Real(t)
	admin := srv.Client(t)
	ctx := context.Background()
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "nopubsub", "on", ">pw", "~*", "+@all", "-@pubsub").Err())
	limited := srv.Client(t, func(o *redis.Options) { o.Username, o.Password = "nopubsub", "pw" })
	holder := rlock.New(locktest.NewClient(t, admin), "acl")
	wc := locktest.NewClient(t, limited, redcoord.WithMaxPollInterval(100*time.Millisecond))
	waiter := rlock.New(wc, "acl")
	require.NoError(t, holder.Lock(ctx))
	got := make(chan error, 1)
	go func() { got <- waiter.Lock(ctx) }()
	locktest.Eventually(t, func() bool { h, _ := wc.Hub(); return h != nil && h.Stats().Refused }, "the Hub saw SUBSCRIBE refused")
	require.NoError(t, holder.Unlock(ctx))
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("a waiter that cannot subscribe was stranded")
	}
	require.NoError(t, waiter.Unlock(ctx))
}

// A release wakes one registered waiter, in its own process; a crashed
// process's registration is woken once (see
// locktest.DeadRegistrationWokenOnce).
func TestDeadWaiterProcessIsWokenOnce(t *testing.T) {
	locktest.DeadRegistrationWokenOnce(t, locktest.DeadWaiter{
		Registry: "rc:{n}:waiters", Member: "crashed:1:1",
		Open: func(hc, lc *redcoord.Client) (hold, release, wait, done func(context.Context) error) {
			holder, live := rlock.New(hc, "n"), rlock.New(lc, "n")
			return holder.Lock, holder.Unlock, live.Lock, live.Unlock
		},
	})
}

// A waiter whose subscription is never confirmed polls, and its polls do
// not register it: a release would spend its wake on a waiter that cannot
// hear it. Its first poll drops the registration its first try made.
func TestDeafWaiterDoesNotRegister(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		const poll = 2 * time.Second
		p := newPair(t, poll)
		p.killHub(t) // the waiter's next subscription is never confirmed
		defer p.faults.Unblackhole()
		holderRDB := p.holderRDB

		holder, waiter := rlock.New(p.hc, "n"), rlock.New(p.wc, "n")
		require.NoError(t, holder.Lock(ctx))
		acquired := make(chan error, 1)
		go func() { acquired <- waiter.Lock(ctx) }()
		synctest.Wait()
		registered := func() int64 { return holderRDB.ZCard(ctx, "rc:{n}:waiters").Val() }
		require.Equal(t, int64(1), registered(), "the first try registered")
		time.Sleep(poll + poll/2) // the subscription is given up: the wait polls
		require.Zero(t, registered(), "the first poll unregistered")

		require.NoError(t, holder.Unlock(ctx)) // wakes nobody
		require.NoError(t, holder.Lock(ctx))   // before the waiter's next poll
		time.Sleep(poll)                       // that poll fails
		assert.Zero(t, registered(), "a poll of a wait that cannot hear registered it again")

		require.NoError(t, holder.Unlock(ctx))
		time.Sleep(poll)
		require.NoError(t, <-acquired, "the deaf waiter gets the lock on its timer")
		require.NoError(t, waiter.Unlock(ctx))
	})
}
