package rlock_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rlock"
)

// published records every message published on the server from now on,
// as "<channel> <payload>", and returns a function that lists them once
// the bubble is idle.
func published(t *testing.T, p *locktest.Proc) func() []string {
	t.Helper()
	ctx := context.Background()
	ps := p.RDB.PSubscribe(ctx, "*")
	t.Cleanup(func() { _ = ps.Close() })
	_, err := ps.Receive(ctx) // the confirmation
	require.NoError(t, err)
	var mu sync.Mutex
	var got []string
	msgs := ps.Channel()
	go func() {
		for m := range msgs {
			mu.Lock()
			got = append(got, m.Channel+" "+m.Payload)
			mu.Unlock()
		}
	}()
	return func() []string {
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// warm loads the release script into the server with a Lock and Unlock
// of m, so that a fault armed on its EVALSHA meets a run of the script,
// not a NOSCRIPT reply.
func warm(t *testing.T, m *rlock.Mutex) {
	t.Helper()
	require.NoError(t, m.Lock(context.Background()))
	require.NoError(t, m.Unlock(context.Background()))
}

// clientChannel is the channel on which p's Client hears the wakes of "n".
func clientChannel(p *locktest.Proc) string { return "rc:{n}:ch:" + p.C.ID() }

// A release whose next registered waiter is in the releasing Client hands
// the wake to it locally: nothing is published, and the waiter takes the
// lock at once.
func TestReleaseHandsOnLocallyWithoutMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		p := procs(t, 1, nil)[0]
		holder := rlock.New(p.C, "n")
		require.NoError(t, holder.Lock(ctx))
		order := make(chan int, 2)
		first := waitsOn(ctx, t, p.C, order, 0)
		synctest.Wait()
		second := waitsOn(ctx, t, p.C, order, 1)
		synctest.Wait()
		require.Equal(t, int64(1), registered(t, p))
		messages := published(t, p)

		released := time.Now()
		require.NoError(t, holder.Unlock(ctx))
		require.NoError(t, <-first)
		require.NoError(t, <-second)
		assert.Equal(t, []int{0, 1}, []int{<-order, <-order})
		assert.Equal(t, released, time.Now(), "every hand-off at once")
		assert.Empty(t, messages(), "a release to a waiter of its own Client published")
		assert.Zero(t, registered(t, p))
	})
}

// A release whose next registration is another Client's still wakes it by
// a message on its channel; a release whose next is its own Client's
// hands on locally. Two Clients, one waiter C in wp registered first, two
// local waiters A, B of the holder's Client hp: hp's release wakes wp (a
// message), C's release wakes hp (a message), A's release hands on to B
// in hp (none), and B's wakes no one.
func TestReleasePublishesToAnotherClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ps := procs(t, 2, nil)
		hp, wp := ps[0], ps[1]
		holder := rlock.New(hp.C, "n")
		require.NoError(t, holder.Lock(ctx))
		order := make(chan int, 3)
		c := waitsOn(ctx, t, wp.C, order, 2)
		synctest.Wait()
		time.Sleep(time.Millisecond) // hp registers after wp
		a := waitsOn(ctx, t, hp.C, order, 0)
		synctest.Wait()
		b := waitsOn(ctx, t, hp.C, order, 1)
		synctest.Wait()
		require.Equal(t, int64(2), registered(t, hp))
		messages := published(t, hp)

		released := time.Now()
		require.NoError(t, holder.Unlock(ctx))
		for _, done := range []<-chan error{c, a, b} {
			require.NoError(t, <-done)
		}
		assert.Equal(t, []int{2, 0, 1}, []int{<-order, <-order, <-order})
		assert.Equal(t, released, time.Now(), "every hand-off at once")
		assert.Equal(t, []string{clientChannel(wp) + " 1", clientChannel(hp) + " 1"}, messages(),
			"one message per release to another Client, none to the releaser's own")
		assert.Zero(t, registered(t, hp))
	})
}

// A local hand-on that finds no waiter (the one it was for gave up
// between the release script and its reply) is lost as a message to a
// Client without waiters would be, and the wake goes on all the same: the
// waiter's leave finds its Client woken and the lock free, and wakes the
// next registered Client, at once.
func TestLocalHandOnToAWaiterThatLeftPassesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ps := procs(t, 2, nil)
		hp, op := ps[0], ps[1]
		holder := rlock.New(hp.C, "n")
		warm(t, holder)
		require.NoError(t, holder.Lock(ctx))
		order := make(chan int, 2)
		wctx, cancelLocal := context.WithCancel(ctx)
		local := waitsOn(wctx, t, hp.C, order, 0)
		synctest.Wait()
		time.Sleep(time.Millisecond) // the other Client registers after hp
		other := waitsOn(ctx, t, op.C, order, 1)
		synctest.Wait()
		require.Equal(t, int64(2), registered(t, hp))
		messages := published(t, hp)

		const late = 10 * time.Millisecond
		hp.Faults.DelayReply(locktest.EvalSHA("lock_release"), late)
		unlocked := make(chan error, 1)
		go func() { unlocked <- holder.Unlock(ctx) }()
		synctest.Wait() // the release ran; its reply, with the hand-on, is held back
		require.Equal(t, 1, hp.Faults.Delayed())
		start := time.Now()
		cancelLocal()
		require.ErrorIs(t, <-local, context.Canceled, "the local waiter was woken before its hand-on")
		require.NoError(t, <-other)
		assert.Equal(t, 1, <-order)
		assert.Equal(t, start, time.Now(), "the wake went on to the other Client at once")
		require.NoError(t, <-unlocked)
		assert.Equal(t, []string{clientChannel(op) + " 1"}, messages(), "only the leave's pass-on was published")
		assert.Zero(t, registered(t, hp))
	})
}

// A release to zero whose reply is lost, and which go-redis sends again,
// finds itself applied and cannot tell whom its first run woke: its
// Client wakes one of its own waiters, so a hand-on carried by the lost
// reply is not lost with it.
func TestRetriedReleaseHandsOnLocally(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		p := procs(t, 1, nil)[0]
		holder := rlock.New(p.C, "n")
		warm(t, holder)
		require.NoError(t, holder.Lock(ctx))
		order := make(chan int, 1)
		waiter := waitsOn(ctx, t, p.C, order, 0)
		synctest.Wait()
		require.Equal(t, int64(1), registered(t, p))
		messages := published(t, p)

		p.Faults.DropReply(locktest.EvalSHA("lock_release"))
		require.NoError(t, holder.Unlock(ctx)) // sent twice: go-redis retries after a pause
		require.Equal(t, 1, p.Faults.Fired())
		unlocked := time.Now()
		require.NoError(t, <-waiter)
		assert.Equal(t, 0, <-order)
		assert.Equal(t, unlocked, time.Now(), "the waiter took the lock as soon as the retry's reply came")
		assert.Empty(t, messages())
		assert.Zero(t, registered(t, p))
	})
}
