package hub

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/obs"
)

// limitedUser creates an ACL user on a real server and returns a client
// logged in as it. rules follow `ACL SETUSER limited on >pw`.
func limitedUser(t *testing.T, srv *server, rules ...any) *redis.Client {
	t.Helper()
	admin := newClient(t, srv)
	args := append([]any{"ACL", "SETUSER", "limited", "reset", "on", ">pw", "~*"}, rules...)
	require.NoError(t, admin.Do(testCtx(t), args...).Err())
	return newClient(t, srv, func(o *redis.Options) {
		o.Username, o.Password = "limited", "pw"
	})
}

// TestRefused: a user whose ACL denies the pub/sub commands. The confirm
// timeout and the ctx are both far longer than the test may run, so
// ErrSubscribeRefused can only come from the server's error reply.
func TestRefused(t *testing.T) {
	srv := startRedisServer(t)
	rdb := limitedUser(t, srv, "&*", "+@all", "-@pubsub")
	h := newHub(t, rdb, WithConfirmTimeout(time.Hour), WithPollInterval(time.Millisecond))
	ctx, cancel := context.WithTimeout(testCtx(t), time.Hour)
	defer cancel()

	for i := 0; i < 2; i++ { // the second is refused without asking the server
		_, err := h.Subscribe(ctx, "ch", "")
		require.ErrorIs(t, err, errs.ErrSubscribeRefused)
		assert.Contains(t, err.Error(), "NOPERM")
	}
	st := h.Stats()
	assert.ErrorIs(t, st.Err, errs.ErrSubscribeRefused)
	st.Err = nil
	assert.Equal(t, Stats{Refused: true, Commands: 1}, st) // the probe

	// Wait polls instead. Nobody publishes (this user could not anyway).
	calls := 0
	err := h.Wait(testCtx(t), "ch", func(ctx context.Context) (bool, error) {
		calls++
		if calls == 2 {
			require.NoError(t, rdb.Set(ctx, "flag", "up", 0).Err())
		}
		v, err := rdb.Get(ctx, "flag").Result()
		return v == "up", ignoreNil(err)
	})
	require.NoError(t, err)
	assert.Equal(t, 2, calls)
}

// TestConfirmTimeout: the ACL allows SUBSCRIBE, but not on one channel. The
// server's refusal of that channel is swallowed by go-redis's reader, so the
// waiter gives up after the confirm timeout, leaves nothing behind, and the
// Hub keeps serving the channels it may use.
func TestConfirmTimeout(t *testing.T) {
	srv := startRedisServer(t)
	rdb := limitedUser(t, srv, "resetchannels", "&"+DefaultProbeChannel, "&ok:*", "+@all")
	h := newHub(t, rdb, WithConfirmTimeout(200*time.Millisecond))
	ctx := testCtx(t)

	ok := subscribe(t, h, "ok:1", "")
	_, err := h.Subscribe(ctx, "forbidden", "")
	require.ErrorIs(t, err, errs.ErrSubscribeRefused)
	// the probe, ok:1's SUBSCRIBE, and forbidden's SUBSCRIBE and UNSUBSCRIBE
	assert.Equal(t, Stats{Channels: 1, Waiters: 1, Commands: 4}, h.Stats())

	ok2 := subscribe(t, h, "ok:2", "")
	admin := newClient(t, srv)
	require.NoError(t, admin.Publish(ctx, "ok:2", All()).Err())
	awaitWake(t, ok2, "a message on an allowed channel")
	require.NoError(t, admin.Publish(ctx, "ok:1", One()).Err())
	awaitWake(t, ok, "a message on an allowed channel")
}

// TestReconnect drops the Hub's connection on the server side: go-redis
// reconnects and resubscribes, the Hub wakes every waiter (a message may
// have been lost in the gap) and counts a reconnect, and later messages
// still arrive.
func TestReconnect(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *server) {
		rdb := newClient(t, srv)
		var ev heard
		h := newHub(t, rdb, WithObserver(ev.add))
		w := []*Subscription{subscribe(t, h, "a", ""), subscribe(t, h, "a", ""), subscribe(t, h, "b", "")}

		if srv.mr != nil {
			srv.mr.Close()
			require.NoError(t, srv.mr.Restart())
		} else {
			n, err := rdb.ClientKillByFilter(testCtx(t), "TYPE", "pubsub").Result()
			require.NoError(t, err)
			require.Equal(t, int64(1), n)
		}
		for i, s := range w {
			awaitWake(t, s, "reconnect wakes waiter "+string(rune('0'+i)))
		}
		eventually(t, func() bool { return h.Stats().Reconnects >= 1 }, "a reconnect is counted")
		assert.Equal(t, 2, h.Stats().Channels)
		rec := ev.of(obs.HubReconnected)
		require.NotEmpty(t, rec, "the observer hears the reconnect")
		assert.Equal(t, 2, rec[0].Count, "with the channels it had")

		f := newFence(t, h, rdb)
		publish(t, f, "a", One())
		assert.Equal(t, []bool{true, false, false}, takeAll(w))
		publish(t, f, "b", To("", "x")) // malformed: wakes all of b
		assert.Equal(t, []bool{false, false, true}, takeAll(w))

		// A channel subscribed after the reconnect works too.
		c := subscribe(t, h, "c", "")
		publish(t, f, "c", All())
		assert.True(t, take(c))
	})
}

// TestNoConfirmation: a server that accepts connections and never answers.
// Subscribe gives up with ErrSubscribeRefused, later calls fail fast for a
// while instead of waiting again, the Hub is not marked refused for good,
// and Wait polls.
func TestNoConfirmation(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		_ = l.Close()
		wg.Wait()
		for _, c := range conns {
			_ = c.Close()
		}
	})

	rdb := newClient(t, &server{addr: l.Addr().String()}, func(o *redis.Options) {
		o.ReadTimeout = 100 * time.Millisecond
		o.MaxRetries = -1
	})
	h := newHub(t, rdb, WithConfirmTimeout(100*time.Millisecond), WithPollInterval(time.Millisecond))
	ctx := testCtx(t)
	_, err = h.Subscribe(ctx, "ch", "")
	require.ErrorIs(t, err, errs.ErrSubscribeRefused)

	mu.Lock()
	dialled := len(conns)
	mu.Unlock()
	_, err = h.Subscribe(ctx, "ch", "")
	require.ErrorIs(t, err, errs.ErrSubscribeRefused)
	mu.Lock()
	assert.Equal(t, dialled, len(conns), "the second Subscribe must not try again yet")
	mu.Unlock()
	st := h.Stats()
	assert.ErrorIs(t, st.Err, errs.ErrSubscribeRefused, "waits poll until the Hub tries again")
	st.Err = nil
	assert.Equal(t, Stats{Commands: 1}, st, "one probe, not retried yet")

	calls := 0
	require.NoError(t, h.Wait(ctx, "ch", func(context.Context) (bool, error) {
		calls++
		return calls == 3, nil
	}))
}
