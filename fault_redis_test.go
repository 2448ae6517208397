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

const (
	// faultTTL is the lease of every hold in the fault suite: short, so that
	// a fault outlives it within a second or two.
	faultTTL = time.Second
	// faultPoll is the waiters' maximum poll interval: what a waiter pays
	// for a wake-up lost with its connection.
	faultPoll = 100 * time.Millisecond
	// faultWait bounds every wait of a waiter or for a Lost channel.
	faultWait = 15 * time.Second
	// faultOutage is how long a killed Redis stays down before its restart:
	// longer than a poll interval, so that every waiter tries at least once
	// while it is down, and well under a lease minus two renewal intervals,
	// so that a hold that Redis persisted can survive the restart.
	faultOutage = faultPoll + 50*time.Millisecond
)

// faultClient returns a Client on srv with the suite's lease and poll
// interval, closed by t.Cleanup.
func faultClient(t *testing.T, srv *redistest.Server, opts ...redcoord.Option) *redcoord.Client {
	t.Helper()
	opts = append([]redcoord.Option{redcoord.WithLeaseTTL(faultTTL), redcoord.WithMaxPollInterval(faultPoll)}, opts...)
	return locktest.NewClient(t, srv.Client(t), opts...)
}

// fenced is an exclusive hold with a fencing token: a lock's write hold, or
// the only permit of an ExpirableSemaphore.
type fenced interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
	Lost() <-chan struct{}
	Token() uint64
}

// onePermit is an ExpirableSemaphore of one permit seen as a lock. Lock sets
// the total first if nobody has (a restart without persistence forgets it,
// and the application sets it again, as it did at first).
type onePermit struct {
	s *rsemaphore.ExpirableSemaphore
	p rsemaphore.Permit
}

func (o *onePermit) Lock(ctx context.Context) error {
	var err error
	for range 3 { // bounded: the total can vanish only with a restart
		if _, err = o.s.TrySetPermits(ctx, 1); err != nil {
			return err
		}
		var p rsemaphore.Permit
		if p, err = o.s.Acquire(ctx, rsemaphore.AcquireOptions{}); !errors.Is(err, redcoord.ErrNotSet) {
			if err == nil {
				o.p = p
			}
			return err
		}
	}
	return err
}

func (o *onePermit) Unlock(ctx context.Context) error { return o.s.Release(ctx, o.p) }
func (o *onePermit) Lost() <-chan struct{}            { return o.p.Lost() }
func (o *onePermit) Token() uint64                    { return o.p.Token }

// faultKinds are the primitives every fault test covers.
var faultKinds = []struct {
	name string
	new  func(c *redcoord.Client, name string) fenced
}{
	{"rlock", func(c *redcoord.Client, name string) fenced { return rlock.New(c, name) }},
	{"rfairlock", func(c *redcoord.Client, name string) fenced { return rfairlock.New(c, name) }},
	{"rrwlock", func(c *redcoord.Client, name string) fenced { return rrwlock.New(c, name) }},
	{"ExpirableSemaphore", func(c *redcoord.Client, name string) fenced {
		return &onePermit{s: rsemaphore.NewExpirable(c, name)}
	}},
}

// contest is one primitive held by one Client while another Client's
// handle waits for it.
type contest struct {
	kind           string
	holder, waiter fenced
	token          uint64           // the holder's token
	lost           <-chan time.Time // when the holder's Lost closed
	got            <-chan acquired  // the waiter's Lock
	result         acquired         // what got delivered, once collected
}

// acquired is how a waiter's Lock ended.
type acquired struct {
	err        error
	at         time.Time
	holderLost bool            // the holder's Lost had closed when the waiter returned
	token      uint64          // the waiter's token when it returned
	lost       <-chan struct{} // the waiter's Lost
}

// collect waits for every waiter's Lock to return (each is bounded by its
// context), and then for half a lease more: a live hold cannot be reported
// lost that soon after Lock returned it, so a Lost closed by then was lost
// before it was returned.
func collect(all []*contest) {
	var last time.Time
	for _, c := range all {
		c.result = <-c.got
		if c.result.at.After(last) {
			last = c.result.at
		}
	}
	time.Sleep(time.Until(last.Add(faultTTL / 2)))
}

// successor checks the hold that a waiter's Lock returned: a token above
// its predecessor's, and a live hold: its Lost still open after collect's
// half lease, and released by Unlock.
func successor(t *testing.T, c *contest) {
	t.Helper()
	got := c.result
	require.NoError(t, got.err, "%s: the waiter acquires", c.kind)
	if got.token != 0 { // 0: the hold was already reported lost, below
		assert.Greater(t, got.token, c.token, "%s: the successor's token is above its predecessor's", c.kind)
	}
	if locktest.IsClosed(got.lost) {
		t.Errorf("%s: Lock returned nil, but its hold's Lost closed within half a lease (token at return %d)", c.kind, got.token)
		assert.ErrorIs(t, c.waiter.Unlock(context.Background()), redcoord.ErrLeaseLost, c.kind)
		return
	}
	assert.NoError(t, c.waiter.Unlock(context.Background()), "%s: the successor releases its hold", c.kind)
}

// contend has holderC take every kind on a name under prefix and waiterC
// wait for each, and returns once every waiter is waiting (subscribed).
func contend(t *testing.T, prefix string, holderC, waiterC *redcoord.Client) []*contest {
	t.Helper()
	ctx := context.Background()
	var all []*contest
	for _, k := range faultKinds {
		c := &contest{kind: k.name, holder: k.new(holderC, prefix+k.name), waiter: k.new(waiterC, prefix+k.name)}
		require.NoError(t, c.holder.Lock(ctx), k.name)
		c.token, c.lost = c.holder.Token(), closedAt(t, c.holder.Lost())
		wctx, cancel := context.WithTimeout(ctx, faultWait)
		got, done := make(chan acquired, 1), make(chan struct{})
		go func() {
			defer close(done)
			err := c.waiter.Lock(wctx)
			got <- acquired{err: err, at: time.Now(), holderLost: locktest.IsClosed(c.holder.Lost()),
				token: c.waiter.Token(), lost: c.waiter.Lost()}
		}()
		t.Cleanup(func() { cancel(); <-done })
		c.got = got
		all = append(all, c)
	}
	hub, err := waiterC.Hub()
	require.NoError(t, err)
	locktest.Eventually(t, func() bool { return hub.Stats().Waiters == len(all) }, "every waiter subscribes")
	return all
}

// closedAt returns a channel that receives the moment ch closes, or is
// closed empty if ch stays open for faultWait or until the test ends.
func closedAt(t *testing.T, ch <-chan struct{}) <-chan time.Time {
	at, stop, done := make(chan time.Time, 1), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		defer close(at)
		timer := time.NewTimer(faultWait)
		defer timer.Stop()
		select {
		case <-ch:
			at <- time.Now()
		case <-timer.C:
		case <-stop:
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return at
}

// Redis paused (SIGSTOP) for twice the lease, then resumed: every holder's
// Lost closes, every waiter acquires afterwards with a higher token, and no
// waiter holds before its predecessor has been told of its loss.
func TestFaultRedisPaused(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartRestartable(t)
	holderC, waiterC := faultClient(t, srv.Server), faultClient(t, srv.Server)
	all := contend(t, "paused-", holderC, waiterC)

	paused := time.Now()
	srv.Pause(t)
	time.Sleep(2 * faultTTL) // the fault itself: Redis answers nothing for two leases
	srv.Resume(t)
	resumed := time.Now()

	collect(all)
	for _, c := range all {
		lostAt, ok := <-c.lost
		require.True(t, ok, "%s: the holder's Lost closes", c.kind)
		assert.True(t, c.result.holderLost, "%s: the holder was told before the waiter held", c.kind)
		successor(t, c)
		assert.ErrorIs(t, c.holder.Unlock(ctx), redcoord.ErrLeaseLost, c.kind)
		t.Logf("%s: holder's Lost closed %v into the %v pause; waiter acquired %v after the resume",
			c.kind, lostAt.Sub(paused).Round(time.Millisecond), resumed.Sub(paused).Round(time.Millisecond),
			c.result.at.Sub(resumed).Round(time.Millisecond))
	}
}

// Redis killed (SIGKILL) and restarted on the same port. Without
// persistence every hold is gone: its holder's Lost closes. With
// appendonly and appendfsync always, every hold survives: its holder keeps
// it, renewing it, for more than two leases. Either way a waiter that
// waited across the restart acquires afterwards, with a token above every
// token handed out before the restart.
func TestFaultRedisRestarted(t *testing.T) {
	t.Run("without persistence", func(t *testing.T) { restarted(t, false) })
	t.Run("appendonly always", func(t *testing.T) { restarted(t, true) })
}

func restarted(t *testing.T, persist bool) {
	ctx := context.Background()
	var args []string
	if persist {
		args = []string{"--appendonly", "yes", "--appendfsync", "always"}
	}
	srv := redistest.StartRestartable(t, args...)
	holderC, waiterC := faultClient(t, srv.Server), faultClient(t, srv.Server)
	all := contend(t, "restarted-", holderC, waiterC)

	killed := time.Now()
	srv.Kill(t)
	time.Sleep(faultOutage) // the fault itself: Redis is down
	srv.Restart(t)
	restarted := time.Now()
	t.Logf("Redis was down for %v", restarted.Sub(killed).Round(time.Millisecond))

	if !persist {
		collect(all)
		for _, c := range all {
			lostAt, ok := <-c.lost
			require.True(t, ok, "%s: the hold is gone with the data: the holder's Lost closes", c.kind)
			successor(t, c)
			assert.ErrorIs(t, c.holder.Unlock(ctx), redcoord.ErrLeaseLost, c.kind)
			// The restart freed the lock before any renewal could tell the
			// holder: the two overlap, and only the token tells them apart.
			t.Logf("%s: holder's Lost closed %v after the restart; waiter acquired %v after it (holder told by then: %v)",
				c.kind, lostAt.Sub(restarted).Round(time.Millisecond), c.result.at.Sub(restarted).Round(time.Millisecond),
				c.result.holderLost)
		}
		return
	}

	// The holds survive: after more than two leases, every holder still
	// holds (its Lost open, its waiter still waiting), which only renewals
	// on the restarted server can have kept.
	timer := time.NewTimer(5 * faultTTL / 2)
	defer timer.Stop()
	<-timer.C
	for _, c := range all {
		assert.False(t, locktest.IsClosed(c.holder.Lost()), "%s: the holder keeps its hold", c.kind)
		select {
		case got := <-c.got:
			t.Fatalf("%s: the waiter's Lock returned while the hold survived: %v", c.kind, got.err)
		default:
		}
	}
	for _, c := range all {
		require.NoError(t, c.holder.Unlock(ctx), "%s: the surviving hold is released", c.kind)
	}
	collect(all)
	for _, c := range all {
		assert.False(t, c.result.holderLost, "%s: the hold was released, not lost", c.kind)
		successor(t, c)
		t.Logf("%s: waiter acquired %v after the restart", c.kind, c.result.at.Sub(restarted).Round(time.Millisecond))
	}
}
