package scripts

import (
	"context"
	"errors"
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

func testFair(owner string) Fair {
	l := testLock(owner)
	l.Kind = "rfairlock"
	return NewFair(&l, "t:{n}:queue", "t:{n}:alive", "t:{n}:waiting", "")
}

// queue, alive and waiting return the keys of f's queue.
func (f Fair) queue() string   { return f.keys()[2] }
func (f Fair) alive() string   { return f.keys()[3] }
func (f Fair) waiting() string { return f.keys()[4] }

// fstep is one call of a fair script by owner with request owner:seq, or
// one change behind the scripts' back, and what it must reply.
type fstep struct {
	op    string // lock, try, release, leave, beat, force, queue; kill (the request's heartbeat lapses), expire (the lock's lease runs out)
	owner string
	seq   string
	want  any // Acquired (Wait > 0: "some positive wait"), int64, bool, Queue; nil for kill and expire
}

func TestFairScripts(t *testing.T) {
	wait := Acquired{Wait: 1}
	cases := []struct {
		name   string
		steps  []fstep
		holder string   // owner holding at the end ("" free)
		count  int64    // its hold count
		token  uint64   // its token's rank (see tokenRanks)
		queue  []string // the queue at the end
	}{
		{"fresh acquire", []fstep{{"lock", "a", "1", Acquired{OK: true, Token: 1, Count: 1}}}, "a", 1, 1, nil},
		{"a waiter queues once", []fstep{
			{"lock", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"lock", "b", "1", wait},
			{"lock", "b", "1", wait},
			{"lock", "c", "1", wait},
		}, "a", 1, 1, []string{"b:1", "c:1"}},
		{"re-entry does not queue", []fstep{
			{"lock", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"lock", "b", "1", wait},
			{"lock", "a", "2", Acquired{OK: true, Token: 1, Count: 2}},
			{"lock", "a", "2", Acquired{OK: true, Token: 1, Count: 2}},
		}, "a", 2, 1, []string{"b:1"}},
		{"a re-entry leaves the queue", []fstep{ // two waits on one handle
			{"lock", "b", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"lock", "a", "1", wait},
			{"lock", "a", "2", wait},
			{"lock", "c", "1", wait},
			{"release", "b", "2", int64(0)},
			{"lock", "a", "2", Acquired{OK: true, Token: 2, Count: 2}},
		}, "a", 2, 2, []string{"c:1"}},
		{"release grants the head; its retry is not counted twice", []fstep{
			{"lock", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"lock", "b", "1", wait},
			{"lock", "c", "1", wait},
			{"release", "a", "2", int64(0)},
			{"lock", "b", "1", Acquired{OK: true, Token: 2, Count: 1}},
		}, "b", 1, 2, []string{"c:1"}},
		{"release without waiters frees", []fstep{
			{"lock", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"release", "a", "2", int64(0)},
			{"release", "a", "2", int64(0)},
			{"release", "a", "3", int64(-1)},
		}, "", 0, 0, nil},
		{"retried final release is recognised after others took and released", []fstep{
			{"lock", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"lock", "b", "1", wait},
			{"release", "a", "2", int64(0)},
			{"release", "b", "2", int64(0)},
			{"release", "a", "2", int64(0)},
			{"release", "a", "3", int64(-1)},
		}, "", 0, 0, nil},
		{"retried release decrements once", []fstep{
			{"lock", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"lock", "a", "2", Acquired{OK: true, Token: 1, Count: 2}},
			{"release", "a", "3", int64(1)},
			{"release", "a", "3", int64(1)},
		}, "a", 1, 1, nil},
		{"release by another owner is refused", []fstep{
			{"lock", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"lock", "b", "1", wait},
			{"release", "b", "2", int64(-1)},
		}, "a", 1, 1, []string{"b:1"}},
		{"try never queues", []fstep{
			{"lock", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"try", "b", "1", wait},
		}, "a", 1, 1, nil},
		{"try never overtakes a live waiter", []fstep{
			{"lock", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"lock", "b", "1", wait},
			{"expire", "", "", nil},
			{"try", "c", "1", wait}, // and grants the expired lock to b
		}, "b", 1, 2, nil},
		{"an expired lock goes to the head, not to a newcomer", []fstep{
			{"lock", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"lock", "b", "1", wait},
			{"expire", "", "", nil},
			{"lock", "c", "1", wait},
		}, "b", 1, 2, []string{"c:1"}},
		{"release skips dead waiters", []fstep{
			{"lock", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"lock", "b", "1", wait},
			{"lock", "c", "1", wait},
			{"lock", "d", "1", wait},
			{"kill", "b", "1", nil},
			{"kill", "c", "1", nil},
			{"release", "a", "2", int64(0)},
		}, "d", 1, 2, nil},
		{"release with only dead waiters frees", []fstep{
			{"lock", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"lock", "b", "1", wait},
			{"kill", "b", "1", nil},
			{"release", "a", "2", int64(0)},
		}, "", 0, 0, nil},
		{"a free lock behind dead waiters is taken", []fstep{
			{"lock", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"lock", "b", "1", wait},
			{"kill", "b", "1", nil},
			{"expire", "", "", nil},
			{"try", "c", "1", Acquired{OK: true, Token: 2, Count: 1}},
		}, "c", 1, 2, nil},
		{"leave removes the queue entry", []fstep{
			{"lock", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"lock", "b", "1", wait},
			{"lock", "c", "1", wait},
			{"leave", "b", "1", true},
			{"leave", "b", "1", false},
		}, "a", 1, 1, []string{"c:1"}},
		{"leave after a grant hands on", []fstep{
			{"lock", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"lock", "b", "1", wait},
			{"lock", "c", "1", wait},
			{"release", "a", "2", int64(0)},
			{"leave", "b", "1", true},
			{"leave", "b", "1", false},
		}, "c", 1, 2, nil}, // the second token seen: b's grant was never seen
		{"leave hands on an expired lock", []fstep{
			{"lock", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"lock", "b", "1", wait},
			{"lock", "c", "1", wait},
			{"expire", "", "", nil},
			{"leave", "c", "1", true},
		}, "b", 1, 2, nil},
		{"leave undoes a re-entry only", []fstep{
			{"lock", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"lock", "a", "2", Acquired{OK: true, Token: 1, Count: 2}},
			{"leave", "a", "2", true},
			{"leave", "a", "2", false},
		}, "a", 1, 1, nil},
		{"heartbeat of a waiter, then of one that left", []fstep{
			{"lock", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"lock", "b", "1", wait},
			{"beat", "b", "1", int64(1)},
			{"leave", "b", "1", true},
			{"beat", "b", "1", int64(0)},
		}, "a", 1, 1, nil},
		{"heartbeat of a granted waiter", []fstep{
			{"lock", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"lock", "b", "1", wait},
			{"release", "a", "2", int64(0)},
			{"beat", "b", "1", int64(1)},
		}, "b", 1, 2, nil},
		{"heartbeat hands on an expired lock", []fstep{
			{"lock", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"lock", "b", "1", wait},
			{"lock", "c", "1", wait},
			{"expire", "", "", nil},
			{"beat", "c", "1", int64(1)},
		}, "b", 1, 2, []string{"c:1"}},
		{"heartbeat of a lapsed waiter", []fstep{
			{"lock", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"lock", "b", "1", wait},
			{"kill", "b", "1", nil},
			{"release", "a", "2", int64(0)},
			{"beat", "b", "1", int64(0)},
			{"lock", "b", "1", Acquired{OK: true, Token: 2, Count: 1}},
		}, "b", 1, 2, nil},
		{"force hands on", []fstep{
			{"lock", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"lock", "b", "1", wait},
			{"force", "z", "", true},
			{"force", "z", "", true},
			{"force", "z", "", false},
		}, "", 0, 0, nil},
		{"queue length and position", []fstep{
			{"queue", "a", "", Queue{}},
			{"lock", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"lock", "b", "1", wait},
			{"lock", "c", "1", wait},
			{"lock", "c", "2", wait},
			{"queue", "a", "", Queue{Len: 3, Position: 0}},
			{"queue", "b", "", Queue{Len: 3, Position: 1}},
			{"queue", "c", "", Queue{Len: 3, Position: 2}},
			{"kill", "b", "1", nil},
			{"queue", "c", "", Queue{Len: 2, Position: 1}},
		}, "a", 1, 1, []string{"b:1", "c:1", "c:2"}},
	}
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				require.NoError(t, rdb.FlushAll(ctx).Err())
				ranks := &tokenRanks{}
				for i, s := range tc.steps {
					checkReply(t, fmt.Sprintf("step %d: %s by %s", i, s.op, s.owner), s.want, ranks.of(t, runFair(t, ctx, rdb, s)))
				}
				st, err := testFair("a").State(ctx, rdb)
				require.NoError(t, err)
				assert.Equal(t, tc.holder, st.Owner, "holder")
				assert.Equal(t, tc.count, st.Count, "count")
				assert.Equal(t, tc.token, ranks.rank(t, st.Token), "token")
				q, err := rdb.LRange(ctx, "t:{n}:queue", 0, -1).Result()
				require.NoError(t, err)
				if len(tc.queue) == 0 {
					q = nil
				}
				assert.Equal(t, tc.queue, q, "queue")
				alive, err := rdb.ZRange(ctx, "t:{n}:alive", 0, -1).Result()
				require.NoError(t, err)
				waiting := waitingIDs(t, ctx, rdb, "t:{n}:waiting")
				assert.ElementsMatch(t, q, alive, "alive holds the queue's requests")
				assert.ElementsMatch(t, q, waiting, "waiting holds the queue's requests")
			})
		}
	})
}

func runFair(t *testing.T, ctx context.Context, rdb *redis.Client, s fstep) any {
	t.Helper()
	f := testFair(s.owner)
	req := s.owner + ":" + s.seq
	var got any
	var err error
	switch s.op {
	case "lock", "try":
		var a Attempt
		a, err = f.Acquire(ctx, rdb, req, TokenArg(believed(t, ctx, rdb, *f.Lock)), NewLeaseArg(time.Minute, []byte("meta "+req)), s.op == "lock", time.Minute)
		got = a.Acquired
	case "release":
		got, err = f.Release(ctx, rdb, req, false, TokenArg(believed(t, ctx, rdb, *f.Lock)))
	case "leave":
		got, err = f.Leave(ctx, rdb, req)
	case "force":
		got, err = forceReply(f.Force(ctx, rdb, "", fenceNow(t, ctx, rdb, f.Fence), forceReq()))
	case "beat":
		script, keys, args := f.Heartbeat(req, time.Minute)
		got, err = script.Run(ctx, rdb, keys, args...).Int64()
	case "queue":
		got, err = f.QueueState(ctx, rdb)
	case "kill":
		err = rdb.ZAddXX(ctx, f.alive(), redis.Z{Score: 1, Member: req}).Err()
	case "expire":
		err = rdb.Del(ctx, f.Lock.Hash).Err()
	default:
		t.Fatalf("unknown op %q", s.op)
	}
	require.NoError(t, err, "%s by %s", s.op, s.owner)
	return got
}

// A grant stores the grantee's lease and metadata, and is published to the
// grantee alone, with its token, on its client's channel (request "b:1" is
// client "b"'s).
func TestFairGrant(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang guard
		defer cancel()
		sub := rdb.Subscribe(ctx, "t:{n}:ch:b")
		defer sub.Close()
		_, err := sub.Receive(ctx) // the confirmation
		require.NoError(t, err)

		a, b := testFair("a"), testFair("b")
		first, err := a.Acquire(ctx, rdb, "a:1", TokenArg(0), NewLeaseArg(time.Minute, []byte("ma")), true, time.Minute)
		require.NoError(t, err)
		before := time.Now().Add(-time.Second)
		got, err := b.Acquire(ctx, rdb, "b:1", TokenArg(0), NewLeaseArg(5*time.Second, []byte{0x81, ' ', 0xa1}), true, time.Minute)
		require.NoError(t, err)
		require.False(t, got.OK)
		for _, k := range []string{b.queue(), b.alive(), b.waiting()} {
			ttl := rdb.PTTL(ctx, k).Val()
			assert.Greater(t, ttl, 50*time.Second, "%s outlives the heartbeat deadline", k)
			assert.LessOrEqual(t, ttl, time.Minute, k)
		}
		deadline := rdb.ZScore(ctx, b.alive(), "b:1").Val()
		assert.InDelta(t, float64(time.Now().Add(time.Minute).UnixMilli()), deadline, 5000, "heartbeat deadline in server ms")

		server, err := rdb.Time(ctx).Result()
		require.NoError(t, err)
		assert.InDelta(t, server.UnixMilli(), got.Now, 1000, "the server's clock in ms")

		n, err := a.Release(ctx, rdb, "a:2", false, TokenArg(first.Token))
		require.NoError(t, err)
		require.Zero(t, n)
		msg, err := sub.ReceiveMessage(ctx)
		require.NoError(t, err)
		id, payload, _ := strings.Cut(msg.Payload, " ")
		assert.Equal(t, "@b:1", id, "published to b's request alone")
		token, at, ok := ParseGrant(payload)
		require.True(t, ok, "payload %q", payload)
		assert.Greater(t, token, first.Token, "the grant's token")
		assert.GreaterOrEqual(t, at, got.Now, "granted after b's try")
		assert.InDelta(t, server.UnixMilli(), at, 1000)

		time.Sleep(20 * time.Millisecond)
		again, err := b.Acquire(ctx, rdb, "b:1", TokenArg(0), NewLeaseArg(5*time.Second, nil), true, time.Minute)
		require.NoError(t, err)
		assert.Equal(t, Acquired{OK: true, Token: token, Count: 1}, again.Acquired, "a retry finds the grant")
		assert.GreaterOrEqual(t, again.Age, 20*time.Millisecond, "and how long ago it was made")
		assert.Less(t, again.Age, 5*time.Second)

		st, err := b.State(ctx, rdb)
		require.NoError(t, err)
		assert.Equal(t, "b", st.Owner)
		assert.Equal(t, token, st.Token)
		assert.Equal(t, []byte{0x81, ' ', 0xa1}, st.Meta, "binary metadata with a space survives")
		assert.True(t, st.AcquiredAt.After(before))
		assert.Greater(t, st.Remaining, 3*time.Second, "the grantee's own lease")
		assert.LessOrEqual(t, st.Remaining, 5*time.Second)
		assert.Zero(t, rdb.Exists(ctx, b.queue(), b.alive(), b.waiting()).Val(), "an empty queue leaves no key")
	})
}

// A key of another type, or a lock hash another primitive wrote, is refused
// with ErrWrongType by every fair script, and every key is left as it was.
// A fence of the wrong type is refused by the scripts that would hand out a
// token: an acquire, and any script that may hand the lock to a waiter.
func TestFairWrongType(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		f := testFair("a")
		waiter := func() { // a queued waiter, so that a script would write if it could
			rdb.RPush(ctx, f.queue(), "b:1")
			rdb.ZAdd(ctx, f.alive(), redis.Z{Score: 1, Member: "b:1"})
			rdb.HSet(ctx, f.waiting(), "b:1", "1000 m")
		}
		setups := map[string]func(){
			"string at lock":    func() { rdb.Set(ctx, f.Lock.Hash, "x", 0) },
			"foreign hash":      func() { rdb.HSet(ctx, f.Lock.Hash, "field", "x") },
			"other kind":        func() { rdb.HSet(ctx, f.Lock.Hash, "k", "rlock", "o", "z", "c", 1) },
			"string at fence":   func() { waiter(); rdb.Set(ctx, f.Fence, "x", 0) },
			"string at queue":   func() { rdb.Set(ctx, f.queue(), "x", 0) },
			"hash at alive":     func() { waiter(); rdb.Del(ctx, f.alive()); rdb.HSet(ctx, f.alive(), "b:1", "1") },
			"string at waiting": func() { waiter(); rdb.Set(ctx, f.waiting(), "x", 0) },
			"string at all keys": func() {
				rdb.MSet(ctx, f.Lock.Hash, "x", f.Fence, "x", f.queue(), "x", f.alive(), "x", f.waiting(), "x")
			},
		}
		for name, setup := range setups {
			t.Run(name, func(t *testing.T) {
				require.NoError(t, rdb.FlushAll(ctx).Err())
				setup()
				before := dump(t, rdb)
				fenceOnly := name == "string at fence"
				check := func(op string, err error, fenceToo bool) {
					t.Helper()
					if fenceOnly && !fenceToo {
						assert.NoError(t, err, op)
						return
					}
					assert.True(t, errors.Is(err, errs.ErrWrongType), "%s: %v", op, err)
				}
				_, err := f.Acquire(ctx, rdb, "a:1", TokenArg(0), NewLeaseArg(time.Minute, nil), true, time.Minute)
				check("acquire", err, true)
				_, err = f.Release(ctx, rdb, "a:2", false, NoToken) // not held: it writes nothing
				check("release", err, false)
				_, err = f.Leave(ctx, rdb, "a:1")
				check("leave", err, true)
				_, err = f.Force(ctx, rdb, "", fenceNow(t, ctx, rdb, f.Fence), forceReq())
				check("force", err, true)
				_, err = f.QueueState(ctx, rdb)
				check("queue", err, false)
				script, keys, args := f.Heartbeat("a:1", time.Minute)
				err = (&Script{name: "fair_heartbeat", Script: script}).wrap(script.Run(ctx, rdb, keys, args...).Err())
				check("heartbeat", err, true)
				assert.Equal(t, before, dump(t, rdb), "keys changed")
			})
		}
	})
}

// With a fence of the wrong type, a release that leaves nobody to hand the
// lock to still works (as rlock's does); one that would grant it to a waiter
// is refused and changes nothing.
func TestFairWrongTypeFenceRelease(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		a, b := testFair("a"), testFair("b")
		for _, waits := range []bool{false, true} {
			require.NoError(t, rdb.FlushAll(ctx).Err())
			held, err := a.Acquire(ctx, rdb, "a:1", TokenArg(0), NewLeaseArg(time.Minute, nil), true, time.Minute)
			require.NoError(t, err)
			if waits {
				_, err = b.Acquire(ctx, rdb, "b:1", TokenArg(0), NewLeaseArg(time.Minute, nil), true, time.Minute)
				require.NoError(t, err)
			}
			require.NoError(t, rdb.Del(ctx, a.Fence).Err())
			require.NoError(t, rdb.Set(ctx, a.Fence, "x", 0).Err())
			before := dump(t, rdb)
			n, err := a.Release(ctx, rdb, "a:2", false, TokenArg(held.Token))
			if waits {
				assert.True(t, errors.Is(err, errs.ErrWrongType), "%v", err)
				assert.Equal(t, before, dump(t, rdb), "keys changed")
			} else {
				require.NoError(t, err)
				assert.Zero(t, n)
			}
		}
	})
}

func TestParseGrant(t *testing.T) {
	for payload, want := range map[string]struct {
		token uint64
		at    int64
		ok    bool
	}{
		"7 1700000000123": {7, 1700000000123, true},
		"7":               {},
		"":                {},
		"0 1":             {},
		"-1 1":            {},
		"7 x":             {},
		"x 1":             {},
		"7 1 2":           {},
	} {
		token, at, ok := ParseGrant(payload)
		assert.Equal(t, want.ok, ok, payload)
		assert.Equal(t, want.token, token, payload)
		assert.Equal(t, want.at, at, payload)
	}
}

func TestFairSHA(t *testing.T) {
	for _, s := range fairScripts {
		assert.Equal(t, s.Hash(), SHA(s.Name()))
		assert.True(t, strings.HasPrefix(s.Name(), "fair_"), s.Name())
	}
	assert.Empty(t, SHA("fair_lib"), "the prelude is not a script")
}
