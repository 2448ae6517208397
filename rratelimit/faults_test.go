package rratelimit_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rratelimit"
)

// A take whose reply is lost, and which go-redis sends again, is counted
// once: the retry finds its own request id as the last one counted.
func TestLostReplyCountedOnce(t *testing.T) {
	locktest.InBubble(t, 1, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		lim := rratelimit.New(ps[0].C, "lost", rratelimit.PerSecond(10).WithBurst(3))
		// rate_take is loaded: the dropped reply is not a NOSCRIPT.
		_, err := rratelimit.New(ps[0].C, "warm", rratelimit.PerSecond(1)).Allow(ctx)
		require.NoError(t, err)

		start := time.Now()
		ps[0].Faults.DropReply(locktest.EvalSHA("rate_take"))
		r, err := lim.Allow(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, ps[0].Faults.Fired(), "the reply was dropped")
		assert.True(t, r.Allowed)
		assert.Equal(t, 2, r.Remaining, "counted once")

		ps[0].Faults.DropReply(locktest.EvalSHA("rate_take"))
		require.NoError(t, lim.WaitN(ctx, 2)) // the rest of the burst: no wait
		require.Equal(t, 2, ps[0].Faults.Fired())
		retried := time.Since(start) // go-redis's back-offs before its retries
		r, err = lim.Allow(ctx)
		require.NoError(t, err)
		assert.False(t, r.Allowed)
		// The server's clock is read in whole microseconds.
		assert.InDelta(t, 100*time.Millisecond-retried, r.RetryAfter, float64(2*time.Microsecond), "the wait counted its 2 events once")
	})
}

// A take whose reply is lost is counted once even when another take comes
// in between, before go-redis sends it again: the retry finds its request
// id among the recent takes' and replies with its first slot.
func TestLostReplyCountedOnceWithTakeBetween(t *testing.T) {
	locktest.InBubble(t, 2, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		limit := rratelimit.PerMinute(1).WithBurst(3) // go-redis's back-offs drain next to nothing
		a := rratelimit.New(ps[0].C, "lost", limit)
		b := rratelimit.New(ps[1].C, "lost", limit)
		// rate_take is loaded: the dropped reply is not a NOSCRIPT.
		_, err := rratelimit.New(ps[1].C, "warm", limit).Allow(ctx)
		require.NoError(t, err)

		// b takes one event while a's take, applied, waits for its retry.
		between := take(t, ps[0], 1, func() {
			r, err := b.Allow(ctx)
			assert.NoError(t, err)
			assert.True(t, r.Allowed)
		})
		r, err := a.Allow(ctx)
		require.NoError(t, err)
		<-between
		require.Equal(t, 1, ps[0].Faults.Fired(), "the reply was dropped")
		assert.True(t, r.Allowed)
		assert.Equal(t, 1, r.Remaining, "a's event counted once, b's once")
		r, err = b.Allow(ctx)
		require.NoError(t, err)
		assert.True(t, r.Allowed, "the burst's third event")

		// A Wait's retry sleeps until its first slot, not a second one.
		time.Sleep(3 * time.Minute) // idle again
		start := time.Now()
		between = take(t, ps[0], 2, func() { assert.NoError(t, b.WaitN(ctx, 3)) })
		require.NoError(t, a.WaitN(ctx, 2))
		assert.Equal(t, time.Duration(0), time.Since(start).Round(time.Second), "a's 2 events came first, within the burst")
		<-between
		require.Equal(t, 2, ps[0].Faults.Fired())
	})
}

// take arms p to drop the reply of its next take, and returns a channel
// closed once f has run: after the take was applied and its reply dropped
// (p's faults have then fired fired times), before go-redis's retry, which
// comes at least 8ms later.
func take(t *testing.T, p *locktest.Proc, fired int, f func()) <-chan struct{} {
	done := make(chan struct{})
	isTake := locktest.EvalSHA("rate_take")
	var once sync.Once
	p.Faults.DropReply(func(args []string) bool {
		if !isTake(args) {
			return false
		}
		once.Do(func() {
			go func() {
				defer close(done)
				for p.Faults.Fired() < fired {
					time.Sleep(10 * time.Microsecond)
				}
				f()
			}()
		})
		return true
	})
	return done
}

// refused is a go-redis client whose every dial is refused: Redis down.
func refused(t *testing.T) *redis.Client {
	rdb := redis.NewClient(&redis.Options{
		Addr: "127.0.0.1:1", DisableIdentity: true, MaxRetries: -1,
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
		},
	})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// With Redis down, Allow and Wait fail with an error that matches
// ErrNotAcquired by default, and admit with WithFailOpen, which the
// observer hears with the error; bad input is still an error.
func TestRedisDown(t *testing.T) {
	var mu sync.Mutex
	var events []redcoord.Event
	c, err := redcoord.New(refused(t), redcoord.WithObserver(func(e redcoord.Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}))
	require.NoError(t, err)
	defer c.Close(context.Background())
	ctx := context.Background()

	closed := rratelimit.New(c, "down", rratelimit.PerSecond(1))
	_, err = closed.Allow(ctx)
	assert.ErrorIs(t, err, redcoord.ErrNotAcquired)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.ErrorContains(t, err, `redcoord: not acquired: rratelimit "down": `)
	err = closed.Wait(ctx)
	assert.ErrorIs(t, err, redcoord.ErrNotAcquired)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.Empty(t, events, "a failure is an error, not an event")

	open := rratelimit.New(c, "down", rratelimit.PerSecond(1), rratelimit.WithFailOpen())
	r, err := open.Allow(ctx)
	require.NoError(t, err)
	assert.True(t, r.Allowed)
	require.NoError(t, open.Wait(ctx))
	mu.Lock()
	require.Len(t, events, 2)
	for _, e := range events {
		assert.Equal(t, redcoord.RateAdmitted, e.Kind)
		assert.True(t, errors.Is(e.Err, syscall.ECONNREFUSED), "the event says why: %v", e.Err)
	}
	mu.Unlock()
	_, err = open.AllowN(ctx, 0)
	assert.ErrorIs(t, err, redcoord.ErrInvalidArgument)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	assert.ErrorIs(t, open.Wait(cctx), context.Canceled, "a done context is not an outage")
}

// The observer hears each outcome: admitted at once, admitted after a
// wait (how long), refused (how long until it would be, or why a wait
// ended), with the number of events.
func TestObserverEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mr, opts := redistest.Bubble()
		defer mr.Close()
		var events []redcoord.Event
		p := locktest.NewProc(t, opts, redcoord.WithObserver(func(e redcoord.Event) { events = append(events, e) }))
		defer p.Kill()
		ctx := context.Background()
		lim := rratelimit.New(p.C, "obs", rratelimit.PerSecond(10).WithBurst(2))
		_, err := lim.AllowN(ctx, 2)
		require.NoError(t, err)
		_, err = lim.Allow(ctx)
		require.NoError(t, err)
		require.NoError(t, lim.Wait(ctx))
		dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		assert.Error(t, lim.Wait(dctx))
		cctx, cancel2 := context.WithTimeout(ctx, 150*time.Millisecond)
		defer cancel2()
		go func() { time.Sleep(40 * time.Millisecond); cancel2() }()
		assert.Error(t, lim.Wait(cctx))

		type ev struct {
			Kind  redcoord.EventKind
			Count int
			Wait  time.Duration
			Slept bool
			Err   bool
		}
		var got []ev
		for _, e := range events {
			assert.Equal(t, "rratelimit", e.Primitive)
			assert.Equal(t, "obs", e.Name)
			assert.NotNil(t, e.Context)
			got = append(got, ev{e.Kind, e.Count, e.Wait, e.Waited, e.Err != nil})
		}
		assert.Equal(t, []ev{
			{redcoord.RateAdmitted, 2, 0, false, false},
			{redcoord.RateRefused, 1, 100 * time.Millisecond, false, false},
			{redcoord.RateWaited, 1, 100 * time.Millisecond, true, false},
			{redcoord.RateRefused, 1, 100 * time.Millisecond, false, true}, // its deadline was before its slot
			{redcoord.RateRefused, 1, 40 * time.Millisecond, true, true},   // cancelled after 40ms of 100
		}, got)
	})
}
