package hub

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/errs"
)

func TestNewValidates(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer rdb.Close()

	_, err := New(nil)
	assert.ErrorIs(t, err, errs.ErrInvalidArgument)
	for _, opt := range []Option{
		WithPollInterval(0),
		WithPollInterval(-time.Second),
		WithConfirmTimeout(0),
		WithProbeChannel(""),
	} {
		_, err := New(rdb, opt)
		assert.ErrorIs(t, err, errs.ErrInvalidArgument)
	}
	h, err := New(rdb, WithLogger(nil), WithPollInterval(time.Millisecond))
	require.NoError(t, err)
	assert.Equal(t, Stats{}, h.Stats())
	// A Hub that never subscribed closes without I/O.
	require.NoError(t, h.Close(context.Background()))
	require.NoError(t, h.Close(context.Background()))
}

func TestSubscribeValidates(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *server) {
		h := newHub(t, newClient(t, srv))
		ctx := testCtx(t)
		for _, c := range []struct{ channel, id string }{
			{"", ""},
			{DefaultProbeChannel, ""},
			{"ch", "has space"},
		} {
			_, err := h.Subscribe(ctx, c.channel, c.id)
			assert.ErrorIs(t, err, errs.ErrInvalidArgument, "%+v", c)
		}
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		_, err := h.Subscribe(cancelled, "ch", "")
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 0, h.Stats().Waiters)
	})
}

// pubsubChannels is PUBSUB CHANNELS without the Hub's probe channel.
func pubsubChannels(t *testing.T, rdb *redis.Client) []string {
	chans, err := rdb.PubSubChannels(testCtx(t), "*").Result()
	require.NoError(t, err)
	var out []string
	for _, c := range chans {
		if c != DefaultProbeChannel {
			out = append(out, c)
		}
	}
	return out
}

func TestManyWaitersOneConnection(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *server) {
		const channels, perChannel = 100, 10
		rdb := newClient(t, srv)
		h := newHub(t, rdb)
		f := newFence(t, h, rdb)

		subs := make([]*Subscription, channels*perChannel)
		errc := make(chan error, len(subs))
		var wg sync.WaitGroup
		for i := range subs {
			wg.Go(func() {
				s, err := h.Subscribe(testCtx(t), fmt.Sprintf("many:%d", i%channels), "")
				subs[i] = s
				errc <- err
			})
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			require.NoError(t, err)
		}
		st := h.Stats()
		assert.Equal(t, channels+1, st.Channels) // + the fence
		assert.Equal(t, len(subs)+1, st.Waiters)

		// One subscriber connection on the server for all of them.
		names := make([]string, channels)
		for i := range names {
			names[i] = fmt.Sprintf("many:%d", i)
		}
		numsub, err := rdb.PubSubNumSub(testCtx(t), names...).Result()
		require.NoError(t, err)
		for _, name := range names {
			assert.Equal(t, int64(1), numsub[name], name)
		}
		if srv.mr == nil {
			list, err := rdb.Do(testCtx(t), "CLIENT", "LIST", "TYPE", "pubsub").Text()
			require.NoError(t, err)
			assert.Equal(t, 1, strings.Count(strings.TrimSpace(list), "\n")+1, list)
		}

		// Every one of them is reached.
		for _, name := range names {
			require.NoError(t, rdb.Publish(testCtx(t), name, All()).Err())
		}
		f.sync(t)
		for i, s := range subs {
			require.True(t, take(s), "waiter %d", i)
		}

		for _, s := range subs {
			wg.Go(s.Close)
		}
		wg.Wait()
		st = h.Stats()
		assert.Equal(t, 1, st.Channels)
		assert.Equal(t, 1, st.Waiters)
		// UNSUBSCRIBE is not waited for: poll the server.
		eventually(t, func() bool {
			chans := pubsubChannels(t, rdb)
			return len(chans) == 1 && chans[0] == "test:fence"
		}, "the server forgets the channels")
	})
}

// TestResubscribeChurn subscribes and leaves one channel over and over. Each
// round starts with a waiter that leaves before its SUBSCRIBE is confirmed
// (what a Subscribe whose ctx ends does), so the server sees SUBSCRIBE,
// UNSUBSCRIBE, SUBSCRIBE. The next Subscribe must wait for the second
// confirmation: taking the first for it would let a message published in
// between be lost, and the late confirmation would then arrive as a
// spurious wake, which the fence makes visible.
func TestResubscribeChurn(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *server) {
		rdb := newClient(t, srv)
		h := newHub(t, rdb)
		f := newFence(t, h, rdb)
		ctx := testCtx(t)
		for i := 0; i < 100; i++ {
			early, _, err := h.register(ctx, "churn", "", 1, false)
			require.NoError(t, err)
			early.Close()

			a, err := h.Subscribe(ctx, "churn", "")
			require.NoError(t, err)
			b, err := h.Subscribe(ctx, "churn", "")
			require.NoError(t, err)
			f.sync(t)
			require.False(t, take(a), "iteration %d: a confirmation was taken for the wrong SUBSCRIBE", i)

			a.Close()
			require.NoError(t, rdb.Publish(ctx, "churn", All()).Err())
			awaitWake(t, b, fmt.Sprintf("iteration %d", i))
			b.Close()
		}
		st := h.Stats()
		// the fence; commands: the probe, the fence's SUBSCRIBE, and per
		// iteration early's SUBSCRIBE and UNSUBSCRIBE, a's SUBSCRIBE (shared
		// by b) and b's UNSUBSCRIBE
		assert.Equal(t, Stats{Channels: 1, Waiters: 1, Commands: 2 + 100*4}, st)
	})
}

// Pin's subscription is no waiter, even while it waits for its
// confirmation: Stats and Waiters do not count it then either.
func TestKeepUncounted(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *server) {
		h := newHub(t, newClient(t, srv))
		ctx := testCtx(t)
		require.NoError(t, h.start(ctx))
		s, ready, err := h.register(ctx, "own", "", 1, true)
		require.NoError(t, err)
		assert.Zero(t, h.Stats().Waiters, "before its confirmation")
		assert.Zero(t, h.Waiters("own"))
		if ready != nil {
			select {
			case <-ready:
			case <-ctx.Done():
				t.Fatal("no confirmation")
			}
		}
		s.Close()
		require.NoError(t, h.Pin(ctx, "own"))
		assert.Zero(t, h.Stats().Waiters, "after")
	})
}

func TestCloseWakesAndStops(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *server) {
		rdb := newClient(t, srv)
		h, err := New(rdb)
		require.NoError(t, err)
		subs := []*Subscription{
			subscribe(t, h, "a", ""), subscribe(t, h, "a", ""), subscribe(t, h, "b", "x"),
		}
		h.mu.Lock()
		done := h.done
		h.mu.Unlock()

		ctx := testCtx(t)
		require.NoError(t, h.Close(ctx))
		select {
		case <-done:
		default:
			t.Fatal("Close returned before the reader goroutine exited")
		}
		assert.Equal(t, []bool{true, true, true}, takeAll(subs))

		_, err = h.Subscribe(ctx, "a", "")
		assert.ErrorIs(t, err, errs.ErrClosed)
		err = h.Wait(ctx, "a", func(context.Context) (bool, error) { return false, nil })
		assert.ErrorIs(t, err, errs.ErrClosed)
		require.NoError(t, h.Close(ctx), "idempotent")
		for _, s := range subs {
			s.Close()
		}
		assert.Equal(t, Stats{}, withoutCommands(h.Stats()))
	})
}

// TestCloseDuringSubscribe closes the Hub while many Subscribe calls are in
// flight: each either succeeds or returns ErrClosed, and nothing leaks.
func TestCloseDuringSubscribe(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *server) {
		h, err := New(newClient(t, srv))
		require.NoError(t, err)
		ctx := testCtx(t)
		var wg sync.WaitGroup
		for i := 0; i < 50; i++ {
			wg.Go(func() {
				s, err := h.Subscribe(ctx, fmt.Sprintf("c:%d", i%7), "")
				if err != nil {
					assert.ErrorIs(t, err, errs.ErrClosed)
					return
				}
				s.Close()
			})
		}
		require.NoError(t, h.Close(ctx))
		wg.Wait()
		assert.Equal(t, Stats{}, withoutCommands(h.Stats()))
	})
}

// With WithLinger, a channel whose last waiter left stays subscribed for
// the linger: a waiter that comes back in time takes it over, confirmed,
// without a SUBSCRIBE, and hears what is published to it; once the linger
// passes with no waiter, the channel is unsubscribed.
func TestLinger(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *server) {
		rdb := newClient(t, srv)
		const linger = 300 * time.Millisecond
		h := newHub(t, rdb, WithLinger(linger))
		ctx := testCtx(t)
		for i := range 5 {
			s, err := h.Subscribe(ctx, "loop", "")
			require.NoError(t, err)
			if i > 0 {
				require.NoError(t, rdb.Publish(ctx, "loop", All()).Err())
				awaitWake(t, s, fmt.Sprintf("round %d", i))
			}
			s.Close()
		}
		assert.Equal(t, int64(2), h.Stats().Commands, "the probe and one SUBSCRIBE")
		assert.Equal(t, Stats{Commands: 2}, h.Stats(), "a lingering channel has no waiter")
		deadline := time.Now().Add(4 * patience)
		for h.Stats().Commands < 3 && time.Now().Before(deadline) {
			time.Sleep(linger / 3)
		}
		assert.Equal(t, int64(3), h.Stats().Commands, "UNSUBSCRIBE once the linger passed")
		// The count rises when UNSUBSCRIBE is sent; the server drops the
		// channel when it reads it.
		eventually(t, func() bool { return !slices.Contains(rdb.PubSubChannels(ctx, "loop").Val(), "loop") },
			"the server dropped the channel")
	})
}

// A reconnect while a channel lingers keeps the channel's topic: go-redis
// resubscribes the channel, and the linger's end still unsubscribes it.
func TestLingerAcrossReconnect(t *testing.T) {
	srv := startRedisServer(t)
	rdb := newClient(t, srv)
	const linger = 300 * time.Millisecond
	h := newHub(t, rdb, WithLinger(linger))
	ctx := testCtx(t)
	s, err := h.Subscribe(ctx, "loop", "")
	require.NoError(t, err)
	s.Close() // lingers
	n, err := rdb.ClientKillByFilter(ctx, "TYPE", "pubsub").Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	eventually(t, func() bool { return h.Stats().Reconnects >= 1 }, "reconnect")
	eventually(t, func() bool { return !slices.Contains(rdb.PubSubChannels(ctx, "loop").Val(), "loop") },
		"unsubscribed once the linger passed")
}
