package core_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/relection"
	"github.com/redcoord/redcoord/rfairlock"
	"github.com/redcoord/redcoord/rlatch"
	"github.com/redcoord/redcoord/rlock"
	"github.com/redcoord/redcoord/rratelimit"
	"github.com/redcoord/redcoord/rrwlock"
	"github.com/redcoord/redcoord/rsemaphore"
)

// driver runs each primitive through its operations for
// TestKeyspaceMatchesSchema, with two processes a and b, sampling the
// keyspace after each step (with every goroutine of the bubble blocked,
// so that a waiter has registered) and checking what Forget reports while
// a lock kind holds or waits for its name and after.
type driver struct {
	t    *testing.T
	ctx  context.Context
	a, b *locktest.Proc
	rec  *recorder
}

// step lets every goroutine of the bubble block, then samples the keyspace.
func (d *driver) step() {
	synctest.Wait()
	d.rec.sample()
}

// idle lets the server's clock pass the tokens handed out: in a bubble
// no time passes between acquires, and tokens are then ahead of the clock
// by one microsecond each (Forget keeps such a fence).
func idle() { time.Sleep(time.Second) }

// async runs f in a goroutine and returns its result's channel.
func async(f func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	return ch
}

func (d *driver) rlock() {
	t, ctx := d.t, d.ctx
	const name = "rlock/n"
	a, b := rlock.New(d.a.C, name), rlock.New(d.b.C, name)
	require.NoError(t, a.Lock(ctx))
	held, stop := a.Context(ctx)
	require.NoError(t, a.Lock(held)) // a re-entry
	stop()
	d.step()
	forget(t, ctx, b, false, "held")
	done := async(func() error { return b.Lock(ctx) })
	d.step()
	forget(t, ctx, b, false, "held and waited for")
	require.NoError(t, a.Extend(ctx, time.Minute))
	_, _, err := a.Holder(ctx)
	require.NoError(t, err)
	require.NoError(t, a.Unlock(ctx))
	require.NoError(t, a.Unlock(ctx))
	require.NoError(t, <-done)
	d.step()
	ok, err := a.ForceUnlock(ctx) // tells b's Client on its notices channel
	require.NoError(t, err)
	require.True(t, ok)
	d.step()
	require.NoError(t, a.Lock(ctx))
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	assert.Error(t, b.Lock(cctx), "a wait that ends leaves")
	cancel()
	require.NoError(t, a.Unlock(ctx))
	d.step()
	idle()
	forget(t, ctx, a, true, "free")
}

func (d *driver) multi() {
	t, ctx := d.t, d.ctx
	mm := rlock.NewMulti(d.a.C, []string{"rlock/m1", "rlock/m2"})
	require.NoError(t, mm.Lock(ctx))
	d.step()
	require.NoError(t, mm.Extend(ctx, time.Minute))
	require.NoError(t, mm.Unlock(ctx))
	d.step()
}

func (d *driver) rfairlock() {
	t, ctx := d.t, d.ctx
	const name = "rfairlock/n"
	a, b := rfairlock.New(d.a.C, name), rfairlock.New(d.b.C, name)
	require.NoError(t, a.Lock(ctx))
	d.step()
	forget(t, ctx, b, false, "held")
	done := async(func() error { return b.Lock(ctx) })
	d.step()
	forget(t, ctx, b, false, "held and queued for")
	_, err := b.Position(ctx)
	require.NoError(t, err)
	require.NoError(t, a.Extend(ctx, time.Minute))
	require.NoError(t, a.Unlock(ctx))
	require.NoError(t, <-done)
	d.step()
	done = async(func() error { return a.Lock(ctx) })
	d.step()
	ok, err := b.ForceUnlock(ctx) // grants a, the head
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, <-done)
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	assert.Error(t, b.Lock(cctx), "a wait that ends leaves")
	cancel()
	require.NoError(t, a.Unlock(ctx))
	d.step()
	idle()
	forget(t, ctx, a, true, "free")
}

func (d *driver) rrwlock() {
	t, ctx := d.t, d.ctx
	const name = "rrwlock/n"
	a, b := rrwlock.New(d.a.C, name), rrwlock.New(d.b.C, name)
	require.NoError(t, a.RLock(ctx))
	d.step()
	forget(t, ctx, b, false, "read held")
	done := async(func() error { return b.Lock(ctx) })
	d.step()
	forget(t, ctx, b, false, "read held, a writer waiting")
	require.NoError(t, a.RExtend(ctx, time.Minute))
	require.NoError(t, a.RUnlock(ctx))
	require.NoError(t, <-done)
	done = async(func() error { return a.RLock(ctx) })
	d.step()
	forget(t, ctx, a, false, "held, a reader waiting")
	_, err := b.State(ctx)
	require.NoError(t, err)
	require.NoError(t, b.Extend(ctx, time.Minute))
	require.NoError(t, b.Unlock(ctx))
	require.NoError(t, <-done)
	require.NoError(t, a.RUnlock(ctx))
	require.NoError(t, b.Lock(ctx))
	ok, err := a.ForceUnlock(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	d.step()
	idle()
	forget(t, ctx, a, true, "free")
}

func (d *driver) semaphore() {
	t, ctx := d.t, d.ctx
	const name = "rsemaphore/unfair"
	a, b := rsemaphore.New(d.a.C, name), rsemaphore.New(d.b.C, name, rsemaphore.WithWaitForSet())
	set := async(func() error { return b.Acquire(ctx, 1) })
	d.step()
	ok, err := a.TrySetPermits(ctx, 1) // tells b on the semaphore's channel
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, <-set)
	done := async(func() error { return a.Acquire(ctx, 1) })
	d.step()
	require.NoError(t, b.Release(ctx, 1))
	require.NoError(t, <-done)
	require.NoError(t, a.AddPermits(ctx, 1))
	_, err = a.Drain(ctx)
	require.NoError(t, err)
	d.step()
	require.NoError(t, a.Release(ctx, 1))
	require.NoError(t, a.SetPermits(ctx, 2))
	_, err = a.State(ctx)
	require.NoError(t, err)
	d.step()
}

func (d *driver) fairSemaphore() {
	t, ctx := d.t, d.ctx
	const name = "rsemaphore/fair"
	a, b := rsemaphore.New(d.a.C, name, rsemaphore.WithFair()), rsemaphore.New(d.b.C, name, rsemaphore.WithFair())
	_, err := a.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, a.Acquire(ctx, 1))
	done := async(func() error { return b.Acquire(ctx, 1) })
	d.step()
	require.NoError(t, a.Release(ctx, 1))
	require.NoError(t, <-done)
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	assert.Error(t, a.Acquire(cctx, 1), "a wait that ends leaves")
	cancel()
	require.NoError(t, b.Release(ctx, 1))
	d.step()
}

func (d *driver) expirable() {
	t, ctx := d.t, d.ctx
	const name = "rsemaphore-expirable/n"
	a, b := rsemaphore.NewExpirable(d.a.C, name), rsemaphore.NewExpirable(d.b.C, name)
	_, err := a.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	p, err := a.Acquire(ctx, rsemaphore.AcquireOptions{})
	require.NoError(t, err)
	var q rsemaphore.Permit
	done := async(func() (err error) { q, err = b.Acquire(ctx, rsemaphore.AcquireOptions{Lease: time.Minute}); return err })
	d.step()
	require.NoError(t, a.Extend(ctx, p, time.Minute))
	require.NoError(t, a.Release(ctx, p))
	require.NoError(t, <-done)
	_, err = a.Acquired(ctx)
	require.NoError(t, err)
	require.NoError(t, b.Release(ctx, q))
	require.NoError(t, a.AddPermits(ctx, 1))
	d.step()
}

func (d *driver) latch() {
	t, ctx := d.t, d.ctx
	const name = "rlatch/n"
	a, b := rlatch.New(d.a.C, name), rlatch.New(d.b.C, name)
	ok, err := a.TrySetCount(ctx, 2)
	require.NoError(t, err)
	require.True(t, ok)
	done := async(func() error { return b.Wait(ctx) })
	d.step()
	require.NoError(t, a.CountDown(ctx))
	require.NoError(t, a.CountDown(ctx))
	require.NoError(t, <-done)
	_, err = b.Count(ctx)
	require.NoError(t, err)
	d.step()
	_, err = a.Delete(ctx)
	require.NoError(t, err)
	d.step()
}

func (d *driver) ratelimit() {
	t, ctx := d.t, d.ctx
	const name = "rratelimit/n"
	a, b := rratelimit.New(d.a.C, name, rratelimit.PerSecond(10).WithBurst(2)), rratelimit.New(d.b.C, name, rratelimit.PerSecond(10))
	_, err := a.Allow(ctx)
	require.NoError(t, err)
	require.NoError(t, b.Wait(ctx))
	require.NoError(t, a.SetLimit(ctx, rratelimit.PerSecond(20)))
	_, err = b.Limit(ctx)
	require.NoError(t, err)
	d.step()
}

func (d *driver) election() {
	t, ctx := d.t, d.ctx
	const name = "relection/n"
	a, b := relection.New(d.a.C, name), relection.New(d.b.C, name)
	other := rlock.New(d.a.C, name) // Forget, whatever kind asks
	octx, stop := context.WithCancel(ctx)
	defer stop()
	seen := a.Observe(octx)
	require.NoError(t, a.Campaign(ctx, "a"))
	<-seen
	d.step()
	forget(t, ctx, other, false, "led")
	done := async(func() error { return b.Campaign(ctx, "b") })
	d.step()
	forget(t, ctx, other, false, "led, a campaign waiting")
	require.NoError(t, a.Proclaim(ctx, "a2"))
	_, _, err := b.Leader(ctx)
	require.NoError(t, err)
	require.NoError(t, a.Resign(ctx))
	require.NoError(t, <-done)
	require.NoError(t, b.Resign(ctx))
	stop()
	d.step()
	idle()
	forget(t, ctx, other, true, "nobody leads or campaigns")
}
