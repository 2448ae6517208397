package scripts

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/redistest"
)

// The fair queue: served in order inside the script, never overtaken.
func TestSemQueue(t *testing.T) {
	runSemCases(t, []semCase{
		{"a waiter queues once", []semStep{
			{"try", "", 2, changed(2, 2)},
			{"acquire", "a:1", 2, took(0)},
			{"acquire", "b:1", 1, refused(0)},
			{"acquire", "c:1", 1, refused(0)},
			{"acquire", "b:1", 1, refused(0)},
			{"tryacq", "d:1", 1, refused(0)},
			{"state", "", 0, SemState{Set: true, Available: 0, Total: 2, Waiting: 2}},
		}, SemState{Set: true, Available: 0, Total: 2, Waiting: 2}, []string{"b:1", "c:1"}},
		{"release serves the queue in order; a grant is not taken twice", []semStep{
			{"try", "", 2, changed(2, 2)},
			{"acquire", "a:1", 2, took(0)},
			{"acquire", "b:1", 1, refused(0)},
			{"acquire", "c:1", 1, refused(0)},
			{"release", "r:1", 1, int64(0)},
			{"acquire", "b:1", 1, took(0)},
			{"acquire", "b:1", 1, took(0)},
			{"release", "r:2", 1, int64(0)},
			{"acquire", "c:1", 1, took(0)},
		}, SemState{Set: true, Available: 0, Total: 2}, nil},
		{"a head of 3 is not overtaken by later requests of 1", []semStep{
			{"try", "", 4, changed(4, 4)},
			{"acquire", "a:1", 3, took(1)},
			{"acquire", "b:1", 3, refused(1)},
			{"acquire", "c:1", 1, refused(1)},
			{"tryacq", "d:1", 1, refused(1)},
			{"release", "r:1", 1, int64(2)},
			{"acquire", "c:1", 1, refused(2)},
			{"tryacq", "d:2", 1, refused(2)},
			{"acquire", "e:1", 1, refused(2)},
			{"release", "r:2", 1, int64(0)}, // 3: all to b; c does not fit
			{"acquire", "b:1", 3, took(0)},
			{"release", "r:3", 1, int64(0)}, // to c; e waits
			{"acquire", "c:1", 1, took(0)},
			{"acquire", "e:1", 1, refused(0)},
			{"release", "r:4", 1, int64(0)},
		}, SemState{Set: true, Available: 0, Total: 4}, nil},
		{"release skips a dead head", []semStep{
			{"try", "", 2, changed(2, 2)},
			{"acquire", "a:1", 2, took(0)},
			{"acquire", "b:1", 1, refused(0)},
			{"acquire", "c:1", 1, refused(0)},
			{"kill", "b:1", 0, nil},
			{"state", "", 0, SemState{Set: true, Available: 0, Total: 2, Waiting: 1}},
			{"release", "r:1", 1, int64(0)},
			{"beat", "b:1", 0, int64(0)},
			{"beat", "c:1", 0, int64(1)},
			{"acquire", "c:1", 1, took(0)},
		}, SemState{Set: true, Available: 0, Total: 2}, nil},
		{"an attempt skips a dead head ahead of it", []semStep{
			{"try", "", 3, changed(3, 3)},
			{"acquire", "a:1", 2, took(1)},
			{"acquire", "b:1", 2, refused(1)},
			{"acquire", "c:1", 1, refused(1)},
			{"tryacq", "d:1", 1, refused(1)},
			{"kill", "b:1", 0, nil},
			{"acquire", "c:1", 1, took(0)},
		}, SemState{Set: true, Available: 0, Total: 3}, nil},
		{"a try is not held back by a dead waiter", []semStep{
			{"try", "", 2, changed(2, 2)},
			{"acquire", "a:1", 1, took(1)},
			{"acquire", "b:1", 2, refused(1)},
			{"kill", "b:1", 0, nil},
			{"tryacq", "c:1", 1, took(0)},
		}, SemState{Set: true, Available: 0, Total: 2}, nil},
		{"leave of the head lets the next in", []semStep{
			{"try", "", 3, changed(3, 3)},
			{"acquire", "a:1", 2, took(1)},
			{"acquire", "b:1", 2, refused(1)},
			{"acquire", "c:1", 1, refused(1)},
			{"acquire", "d:1", 1, refused(1)},
			{"leave", "b:1", 2, false},
			{"state", "", 0, SemState{Set: true, Available: 0, Total: 3, Waiting: 1}}, // c was granted
			{"acquire", "c:1", 1, took(0)},
			{"acquire", "b:1", 2, errs.ErrNotAcquired},
		}, SemState{Set: true, Available: 0, Total: 3, Waiting: 1}, []string{"d:1"}},
		{"leave of a waiter behind the head", []semStep{
			{"try", "", 1, changed(1, 1)},
			{"acquire", "a:1", 1, took(0)},
			{"acquire", "b:1", 1, refused(0)},
			{"acquire", "c:1", 1, refused(0)},
			{"leave", "c:1", 1, false},
			{"beat", "c:1", 0, int64(0)},
		}, SemState{Set: true, Available: 0, Total: 1, Waiting: 1}, []string{"b:1"}},
		{"leave of a granted request gives its permits back, to the next", []semStep{
			{"try", "", 2, changed(2, 2)},
			{"acquire", "a:1", 2, took(0)},
			{"acquire", "b:1", 2, refused(0)},
			{"acquire", "c:1", 1, refused(0)},
			{"release", "r:1", 2, int64(0)},
			{"beat", "b:1", 0, int64(1)},
			{"leave", "b:1", 2, true},
			{"state", "", 0, SemState{Set: true, Available: 1, Total: 2}}, // c was granted
			{"beat", "b:1", 0, int64(0)},
			{"acquire", "b:1", 2, errs.ErrNotAcquired},
			{"acquire", "c:1", 1, took(1)},
		}, SemState{Set: true, Available: 1, Total: 2}, nil},
		{"heartbeat: queued, granted, gone", []semStep{
			{"try", "", 1, changed(1, 1)},
			{"beat", "z:1", 0, int64(0)},
			{"acquire", "a:1", 1, took(0)},
			{"acquire", "b:1", 1, refused(0)},
			{"acquire", "c:1", 1, refused(0)},
			{"beat", "b:1", 0, int64(1)},
			{"beat", "c:1", 0, int64(1)},
			{"kill", "c:1", 0, nil},
			{"beat", "c:1", 0, int64(0)},
			{"release", "r:1", 1, int64(0)},
			{"beat", "b:1", 0, int64(1)},
		}, SemState{Set: true, Available: 0, Total: 1}, nil},
		{"set and add serve the queue", []semStep{
			{"try", "", 2, changed(2, 2)},
			{"acquire", "a:1", 2, took(0)},
			{"acquire", "b:1", 2, refused(0)},
			{"acquire", "c:1", 2, refused(0)},
			{"add", "", 1, changed(3, 1)},
			{"set", "", 4, changed(4, 0)},
			{"acquire", "b:1", 2, took(0)},
			{"add", "", 2, changed(6, 0)},
			{"acquire", "c:1", 2, took(0)},
		}, SemState{Set: true, Available: 0, Total: 6}, nil},
		{"drain goes ahead of the queue", []semStep{
			{"try", "", 3, changed(3, 3)},
			{"acquire", "a:1", 2, took(1)},
			{"acquire", "b:1", 2, refused(1)},
			{"drain", "", 0, int64(1)},
			{"release", "r:1", 1, int64(1)},
		}, SemState{Set: true, Available: 1, Total: 3, Waiting: 1}, []string{"b:1"}},
	})
}

// A queued request whose n a shrink put beyond the total is dropped by the
// next script that serves the queue, so the one behind it is served; its
// own next attempt is refused.
func TestSemShrunkBelowQueued(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		for i, st := range []semStep{
			{"try", "", 3, changed(3, 3)},
			{"acquire", "a:1", 3, took(0)},
			{"acquire", "b:1", 3, refused(0)},
			{"acquire", "c:1", 1, refused(0)},
			{"set", "", 2, changed(2, -1)},
			// b can never fit now: the release drops it and serves c behind it
			{"release", "r:1", 3, int64(1)},
		} {
			runSemStep(t, ctx, rdb, fmt.Sprintf("step %d: %s", i, st.op), st)
		}
		assert.Empty(t, rdb.LRange(ctx, testSem().Queue, 0, -1).Val(), "b left the queue")
		_, err := testSem().Acquire(ctx, rdb, "b:1", 3, SemQueue, time.Minute)
		assert.ErrorIs(t, err, errs.ErrInvalidArgument, "b's next attempt reports it")
		got, err := testSem().Acquire(ctx, rdb, "c:1", 1, SemQueue, time.Minute)
		require.NoError(t, err)
		assert.Equal(t, took(1), got)
	})
}

// What release, set and leave publish, and on which channel: a grant
// ("@<req> granted") to each fair grantee, then a wake ("n:K", K the
// permits left then) to each registered Client whose fewest fits in what
// is left, when no live fair waiter is queued; each on its client's
// channel only (the request id's first part: "b" for b:1). A message is
// written "<client> <payload>", and waiters is what the registry keeps
// after the steps (client ids).
func TestSemPublish(t *testing.T) {
	cases := []struct {
		name    string
		steps   []semStep
		msgs    []string
		waiters []string
	}{
		{"release wakes the registered that fit, oldest first, past one too large", []semStep{
			{"try", "", 3, nil}, {"tryacq", "a:1", 3, took(0)}, {"register", "u:1", 2, refused(0)},
			{"register", "v:1", 3, refused(0)}, {"register", "w:1", 1, refused(0)}, {"release", "r:1", 3, int64(3)},
		}, []string{"u n:3", "w n:1"}, []string{"v"}},
		{"set and add wake the registered that fit", []semStep{
			{"try", "", 1, nil}, {"tryacq", "a:1", 1, nil}, {"register", "u:1", 1, nil}, {"register", "v:1", 1, nil},
			{"set", "", 2, nil}, {"add", "", 1, nil},
		}, []string{"u n:1", "v n:1"}, nil},
		{"a shrink wakes every process with a waiter, once", []semStep{
			{"try", "", 3, nil}, {"tryacq", "a:1", 3, nil}, {"register", "u:1", 1, nil}, {"register", "u:2", 2, nil},
			{"set", "", 2, nil},
		}, []string{"u *"}, []string{"u"}},
		{"a shrink wakes every process with a fair waiter, once", []semStep{
			{"try", "", 3, nil}, {"tryacq", "a:1", 3, nil}, {"acquire", "b:1", 1, refused(0)},
			{"acquire", "b:2", 2, refused(0)}, {"acquire", "c:1", 1, refused(0)}, {"set", "", 2, nil},
		}, []string{"b *", "c *"}, nil},
		{"acquire, a refused release and drain publish nothing", []semStep{
			{"try", "", 2, nil}, {"tryacq", "a:1", 1, nil}, {"tryacq", "b:1", 2, nil},
			{"release", "r:1", 3, errs.ErrNotHeld}, {"drain", "", 0, nil},
		}, nil, nil},
		{"release without waiters publishes nothing", []semStep{
			{"try", "", 2, nil}, {"tryacq", "a:1", 2, nil}, {"release", "r:1", 1, nil}, {"release", "r:1", 1, nil},
		}, nil, nil},
		{"a registration beside a live fair waiter is refused; release grants the queue", []semStep{
			{"try", "", 3, nil}, {"tryacq", "a:1", 3, nil}, {"acquire", "b:1", 2, nil},
			{"register", "u:1", 1, errs.ErrInvalidArgument}, {"release", "r:1", 3, nil},
		}, []string{"b @b:1 granted"}, nil},
		{"release grants in order, up to nothing left", []semStep{
			{"try", "", 2, nil}, {"tryacq", "a:1", 2, nil}, {"acquire", "b:1", 1, nil},
			{"acquire", "c:1", 1, nil}, {"release", "r:1", 2, nil},
		}, []string{"b @b:1 granted", "c @c:1 granted"}, nil},
		{"a fair waiter beside a live registration is refused", []semStep{
			{"try", "", 3, nil}, {"tryacq", "a:1", 3, nil}, {"register", "u:1", 1, refused(0)},
			{"acquire", "b:1", 3, errs.ErrInvalidArgument}, {"release", "r:1", 2, nil},
		}, []string{"u n:2"}, nil},
		{"release past a dead fair waiter", []semStep{
			{"try", "", 1, nil}, {"tryacq", "a:1", 1, nil}, {"acquire", "b:1", 1, nil}, {"kill", "b:1", 0, nil},
			{"register", "u:1", 1, refused(0)}, {"release", "r:1", 1, nil},
		}, []string{"u n:1"}, nil},
		{"a dead registration is dropped, not woken", []semStep{
			{"try", "", 1, nil}, {"tryacq", "a:1", 1, nil}, {"register", "u:1", 1, nil}, {"register", "v:1", 1, nil},
			{"killreg", "u:1", 1, nil}, {"release", "r:1", 1, nil},
		}, []string{"v n:1"}, nil},
		{"a dead registration does not refuse a fair waiter", []semStep{
			{"try", "", 3, nil}, {"tryacq", "a:1", 3, nil}, {"register", "u:1", 2, refused(0)},
			{"killreg", "u:1", 2, nil}, {"acquire", "b:1", 3, refused(0)}, {"release", "r:1", 3, nil},
		}, []string{"b @b:1 granted"}, []string{"u"}},
		{"a woken waiter leaves the registry, and passes the wake on if it gives up", []semStep{
			{"try", "", 1, nil}, {"tryacq", "a:1", 1, nil}, {"register", "u:1", 1, nil}, {"register", "v:1", 1, nil},
			{"release", "r:1", 1, nil}, {"rbeat", "u:1", 1, int64(0)}, {"rbeat", "v:1", 1, int64(1)},
			{"unregister", "u:1", 1, false},
		}, []string{"u n:1", "v n:1"}, nil},
		{"a registered waiter that gives up before any wake passes nothing on", []semStep{
			{"try", "", 1, nil}, {"tryacq", "a:1", 1, nil}, {"register", "u:1", 1, nil}, {"register", "v:1", 1, nil},
			{"unregister", "u:1", 1, false},
		}, nil, []string{"v"}},
		{"a woken waiter that takes the permits is unregistered", []semStep{
			{"try", "", 2, nil}, {"tryacq", "a:1", 2, nil}, {"register", "u:1", 1, nil},
			{"release", "r:1", 1, nil}, {"register", "v:1", 2, refused(1)}, {"register", "u:1", 1, took(0)},
		}, []string{"u n:1"}, []string{"v"}},
		{"leave of a granted request wakes the registered", []semStep{
			{"try", "", 1, nil}, {"tryacq", "a:1", 1, nil}, {"acquire", "b:1", 1, nil}, {"release", "r:1", 1, nil},
			{"register", "u:1", 1, refused(0)}, {"leave", "b:1", 1, true},
		}, []string{"b @b:1 granted", "u n:1"}, nil},
		{"leave of the head grants the next", []semStep{
			{"try", "", 3, nil}, {"tryacq", "a:1", 2, nil}, {"acquire", "b:1", 2, nil},
			{"acquire", "c:1", 1, nil}, {"leave", "b:1", 2, nil},
		}, []string{"c @c:1 granted"}, nil},
		{"leave of the head with nothing to give", []semStep{
			{"try", "", 2, nil}, {"tryacq", "a:1", 2, nil}, {"acquire", "b:1", 2, nil}, {"leave", "b:1", 2, nil},
		}, nil, nil},
		{"add grants the queue", []semStep{
			{"try", "", 2, nil}, {"tryacq", "a:1", 2, nil}, {"acquire", "b:1", 2, nil}, {"add", "", 3, nil},
		}, []string{"b @b:1 granted"}, nil},
	}
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		s := testSem()
		sub := rdb.PSubscribe(ctx, s.Channel+"*")
		defer sub.Close()
		_, err := sub.Receive(ctx) // the confirmation
		require.NoError(t, err)
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				require.NoError(t, rdb.FlushAll(ctx).Err())
				for i, st := range tc.steps {
					runSemStep(t, ctx, rdb, fmt.Sprintf("step %d: %s %s", i, st.op, st.req), st)
				}
				var got []string
				for _, m := range receiveAll(t, rdb, sub, s.Channel) {
					client, ok := strings.CutPrefix(m.Channel, s.Channel+":")
					require.True(t, ok, "%q was published on %s, not on a client's channel", m.Payload, m.Channel)
					got = append(got, client+" "+m.Payload)
				}
				assert.Equal(t, tc.msgs, got)
				for _, m := range got {
					_, msg, _ := strings.Cut(m, " ")
					if id, payload, ok := strings.Cut(msg, " "); ok && strings.HasPrefix(id, "@") && payload != "" {
						assert.True(t, ParseSemGrant(payload), "%q is a grant", m)
					}
				}
				waiters, err := rdb.ZRange(ctx, s.Waiters, 0, -1).Result()
				require.NoError(t, err)
				assert.Equal(t, tc.waiters, nilIfEmpty(waiters), "the registry")
			})
		}
	})
}

// nilIfEmpty returns nil for an empty slice.
func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// receiveAll publishes an end mark on ch and returns the messages sub
// received before it, but a semaphore's "@set " (see
// TestSemSetWakesWaitsForSet).
func receiveAll(t *testing.T, rdb *redis.Client, sub *redis.PubSub, ch string) []*redis.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, rdb.Publish(ctx, ch, "end").Err())
	var got []*redis.Message
	for {
		msg, err := sub.ReceiveMessage(ctx)
		require.NoError(t, err)
		switch {
		case msg.Channel == ch && msg.Payload == "end":
			return got
		case msg.Channel == ch && msg.Payload == "@set ":
			// A semaphore's first set wakes the acquires that wait for it
			// (WithWaitForSet): TestSemSetWakesWaitsForSet.
		default:
			got = append(got, msg)
		}
	}
}

// The queue's keys live as long as the latest heartbeat deadline, the done
// zset as long as its markers, the permits hash for ever.
func TestSemKeyTTL(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		s := testSem()
		queueKeys := []string{s.Queue, s.Alive, s.Waiting}
		ttls := func(keys ...string) []time.Duration {
			var out []time.Duration
			for _, k := range keys {
				out = append(out, rdb.PTTL(ctx, k).Val())
			}
			return out
		}
		_, err := s.Set(ctx, rdb, stepReq(""), SetIfUnset, 1)
		require.NoError(t, err)
		_, err = s.Acquire(ctx, rdb, "a:1", 1, SemQueue, time.Minute)
		require.NoError(t, err)
		_, err = s.Acquire(ctx, rdb, "b:1", 1, SemQueue, time.Minute)
		require.NoError(t, err)
		for i, ttl := range ttls(queueKeys...) {
			assert.Greater(t, ttl, 50*time.Second, queueKeys[i])
			assert.LessOrEqual(t, ttl, time.Minute, queueKeys[i])
		}
		done := rdb.PTTL(ctx, s.Done).Val()
		assert.Greater(t, done, RequestTTL-5*time.Second, "done lives as long as its markers")
		assert.LessOrEqual(t, done, RequestTTL)
		assert.Equal(t, time.Duration(-1), rdb.PTTL(ctx, s.Permits).Val(), "permits never expire")

		_, err = s.Acquire(ctx, rdb, "c:1", 1, SemQueue, 2*time.Minute)
		require.NoError(t, err)
		script, keys, args := s.Heartbeat("b:1", time.Minute)
		require.NoError(t, script.Run(ctx, rdb, keys, args...).Err())
		for i, ttl := range ttls(queueKeys...) {
			assert.Greater(t, ttl, 110*time.Second, "%s: the longest heartbeat wins", queueKeys[i])
		}

		// A queue whose waiters all stopped beating disappears by itself.
		require.NoError(t, rdb.FlushAll(ctx).Err())
		_, err = s.Set(ctx, rdb, stepReq(""), SetIfUnset, 1)
		require.NoError(t, err)
		_, err = s.Acquire(ctx, rdb, "a:1", 1, SemQueue, time.Minute)
		require.NoError(t, err)
		_, err = s.Acquire(ctx, rdb, "b:1", 1, SemQueue, 20*time.Millisecond)
		require.NoError(t, err)
		elapse(t, srv, rdb, 50*time.Millisecond)
		assert.Zero(t, rdb.Exists(ctx, queueKeys...).Val(), "queue keys outlived their heartbeats")
		assert.Equal(t, int64(2), rdb.Exists(ctx, s.Permits, s.Done).Val())
		if srv.Mini != nil { // too long to sleep on redis-server
			elapse(t, srv, rdb, RequestTTL)
			assert.Zero(t, rdb.Exists(ctx, s.Done).Val(), "done outlived its markers")
			assert.Equal(t, int64(1), rdb.Exists(ctx, s.Permits).Val())
		}
	})
}

// elapse lets d pass on the server: miniredis's clock (TIME and TTLs) jumps
// ahead; redis-server's is waited for.
func elapse(t *testing.T, srv *redistest.Server, rdb *redis.Client, d time.Duration) {
	t.Helper()
	if srv.Mini == nil {
		time.Sleep(d)
		return
	}
	now, err := rdb.Time(context.Background()).Result()
	require.NoError(t, err)
	srv.Mini.SetTime(now.Add(d))
}

// A registration keeps what its Client asks for as Go sent it, also past
// 10^14, where Lua would write a number as 2e+14: the heartbeat renews
// it, and a release that frees enough wakes it.
func TestSemRegistersLargeRequests(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		s := testSem()
		const total = 200_000_000_000_000
		sub := rdb.PSubscribe(ctx, s.Channel+"*")
		defer sub.Close()
		_, err := sub.Receive(ctx)
		require.NoError(t, err)
		_, err = s.Set(ctx, rdb, "h:0", SetTotal, total)
		require.NoError(t, err)
		a, err := s.Acquire(ctx, rdb, "h:1", 1, SemTry, time.Minute)
		require.NoError(t, err)
		require.True(t, a.OK)
		a, err = s.Acquire(ctx, rdb, "c:1", total, SemRegister, time.Minute)
		require.NoError(t, err)
		require.False(t, a.OK)
		assert.Equal(t, []string{"c"}, rdb.ZRange(ctx, s.Waiters, 0, -1).Val())
		assert.Equal(t, []redis.Z{{Score: total, Member: "c"}}, rdb.ZRangeWithScores(ctx, s.Sizes, 0, -1).Val())
		script, keys, args := s.Beat("c", time.Minute)
		renewed, err := script.Run(ctx, rdb, keys, args...).Int64()
		require.NoError(t, err)
		assert.Equal(t, int64(1), renewed, "the heartbeat finds the registration")
		_, err = s.Release(ctx, rdb, "h:2", 1, "")
		require.NoError(t, err)
		msgs := receiveAll(t, rdb, sub, s.Channel)
		require.Len(t, msgs, 1)
		assert.Equal(t, s.Channel+":c", msgs[0].Channel)
		assert.Equal(t, "n:200000000000000", msgs[0].Payload)
	})
}

// The set that sets permits where none were publishes "@set " on the
// semaphore's channel, where the acquires that wait for permits to be set
// listen (WithWaitForSet), once: not its retry, not a later set or add.
func TestSemSetWakesWaitsForSet(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		for name, x := range map[string]bool{"sem": false, "xsem": true} {
			require.NoError(t, rdb.FlushAll(ctx).Err())
			s := testSem()
			set := s.Set
			if x {
				xs := testXSem()
				s.Channel, set = xs.Channel, xs.Set
			}
			sub := rdb.Subscribe(ctx, s.Channel)
			_, err := sub.Receive(ctx) // the confirmation
			require.NoError(t, err)
			for _, call := range []struct {
				req, mode string
			}{{"a:1", SetIfUnset}, {"a:1", SetIfUnset}, {"a:2", SetTotal}, {"a:3", AddTotal}} {
				_, err := set(ctx, rdb, call.req, call.mode, 2)
				require.NoError(t, err)
			}
			require.NoError(t, rdb.Publish(ctx, s.Channel, "end").Err())
			var got []string
			for {
				m, err := sub.ReceiveMessage(ctx)
				require.NoError(t, err)
				if m.Payload == "end" {
					break
				}
				got = append(got, m.Payload)
			}
			assert.Equal(t, []string{"@set "}, got, name)
			require.NoError(t, sub.Close())
		}
	})
}
