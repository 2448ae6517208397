package scripts

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/redistest"
)

func testRW(owner string) RW {
	l := testLock(owner)
	l.Kind = "rrwlock"
	return RW{Lock: l, Readers: "t:{n}:readers", Leases: "t:{n}:leases", Writers: "t:{n}:writers",
		WriterWaiters: "t:{n}:wwaiters", WriterChannel: "t:{n}:wch"}
}

// rwstep is one call of a read-write script by owner with request
// owner:seq, or one change behind the scripts' back, and what it must reply.
type rwstep struct {
	op    string // read, write, trywrite, runlock, unlock, leaver, leavew, renewr, beat, force; lapse (owner's read lease runs out), die (owner's heartbeat runs out), expire (the write lease runs out)
	owner string
	seq   string
	want  any // Acquired (Wait > 0: "some positive wait"), int64, bool; "upgrade"; nil for lapse, die, expire
}

func TestRWScripts(t *testing.T) {
	wait := Acquired{Wait: 1}
	held := func(token uint64, count int64) Acquired { return Acquired{OK: true, Token: token, Count: count} }
	cases := []struct {
		name    string
		steps   []rwstep
		writer  string   // the write holder at the end ("" none)
		readers []string // read holders at the end
		waiting int64    // waiting writers at the end
	}{
		{"readers share; a retry is not counted twice", []rwstep{
			{"read", "a", "1", held(0, 1)},
			{"read", "a", "1", held(0, 1)},
			{"read", "b", "1", held(0, 1)},
			{"read", "a", "2", held(0, 2)},
		}, "", []string{"a", "b"}, 0},
		{"a writer excludes; its retry is not counted twice", []rwstep{
			{"write", "a", "1", held(1, 1)},
			{"write", "a", "1", held(1, 1)},
			{"read", "b", "1", wait},
			{"trywrite", "c", "1", wait},
			{"write", "a", "2", held(1, 2)},
		}, "a", nil, 0},
		{"readers hold a writer back, and it holds new readers back", []rwstep{
			{"read", "a", "1", held(0, 1)},
			{"write", "w", "1", wait},
			{"read", "b", "1", wait},
			{"read", "a", "2", held(0, 2)}, // a holder re-enters
			{"runlock", "a", "3", int64(1)},
			{"runlock", "a", "4", int64(0)},
			{"write", "w", "1", held(1, 1)},
		}, "w", nil, 0},
		{"TryLock does not hold readers back", []rwstep{
			{"read", "a", "1", held(0, 1)},
			{"trywrite", "w", "1", wait},
			{"read", "b", "1", held(0, 1)},
		}, "", []string{"a", "b"}, 0},
		{"downgrade, then no upgrade", []rwstep{
			{"write", "a", "1", held(1, 1)},
			{"read", "a", "2", held(1, 1)},
			{"unlock", "a", "3", int64(0)},
			{"read", "b", "1", held(1, 1)},
			{"write", "a", "4", "upgrade"},
			{"write", "c", "1", wait},
		}, "", []string{"a", "b"}, 1},
		{"tokens: every fresh write; reads see the last", []rwstep{
			{"write", "a", "1", held(1, 1)},
			{"unlock", "a", "2", int64(0)},
			{"write", "b", "1", held(2, 1)},
			{"unlock", "b", "2", int64(0)},
			{"read", "c", "1", held(2, 1)},
		}, "", []string{"c"}, 0},
		{"release of what is not held; a retried final release", []rwstep{
			{"runlock", "a", "1", int64(-1)},
			{"unlock", "a", "2", int64(-1)},
			{"read", "a", "3", held(0, 1)},
			{"runlock", "a", "4", int64(0)},
			{"read", "b", "1", held(0, 1)},
			{"runlock", "a", "4", int64(0)},
			{"runlock", "a", "5", int64(-1)},
		}, "", []string{"b"}, 0},
		{"a lapsed reader frees the lock for a writer", []rwstep{
			{"read", "a", "1", held(0, 1)},
			{"write", "w", "1", wait},
			{"lapse", "a", "", nil},
			{"renewr", "a", "", int64(0)},
			{"write", "w", "1", held(1, 1)},
			{"runlock", "a", "2", int64(-1)},
		}, "w", nil, 0},
		{"a dead waiting writer stops holding readers back", []rwstep{
			{"read", "a", "1", held(0, 1)},
			{"write", "w", "1", wait},
			{"beat", "w", "", int64(1)},
			{"read", "b", "1", wait},
			{"die", "w", "", nil},
			{"read", "b", "1", held(0, 1)},
			{"beat", "w", "", int64(0)},
		}, "", []string{"a", "b"}, 0},
		{"an expired writer frees the lock", []rwstep{
			{"write", "a", "1", held(1, 1)},
			{"expire", "", "", nil},
			{"read", "b", "1", held(1, 1)},
			{"unlock", "a", "2", int64(-1)},
		}, "", []string{"b"}, 0},
		{"leave undoes an applied request and stops waiting", []rwstep{
			{"read", "a", "1", held(0, 1)},
			{"read", "a", "2", held(0, 2)},
			{"leaver", "a", "2", true},
			{"leaver", "a", "2", false},
			{"write", "w", "1", wait},
			{"leavew", "w", "1", false},
			{"read", "b", "1", held(0, 1)},
		}, "", []string{"a", "b"}, 0},
		{"leave of a write request that was applied", []rwstep{
			{"write", "w", "1", held(1, 1)},
			{"leavew", "w", "1", true},
			{"read", "b", "1", held(1, 1)},
		}, "", []string{"b"}, 0},
		{"force ends every hold, not the waiting", []rwstep{
			{"read", "a", "1", held(0, 1)},
			{"write", "w", "1", wait},
			{"force", "z", "", true},
			{"force", "z", "", false},
			{"write", "w", "1", held(1, 1)},
		}, "w", nil, 0},
	}
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				require.NoError(t, rdb.FlushAll(ctx).Err())
				ranks := &tokenRanks{}
				for i, s := range tc.steps {
					checkReply(t, fmt.Sprintf("step %d: %s by %s", i, s.op, s.owner), s.want, ranks.of(t, runRW(t, ctx, rdb, s)))
				}
				st, err := testRW("a").State(ctx, rdb)
				require.NoError(t, err)
				assert.Equal(t, tc.writer, st.Writer.Owner, "writer")
				var readers []string
				for _, r := range st.Readers {
					readers = append(readers, r.Owner)
				}
				assert.ElementsMatch(t, tc.readers, readers, "readers")
				assert.Equal(t, tc.waiting, st.WaitingWriters, "waiting writers")
				for _, key := range []string{"t:{n}:readers", "t:{n}:leases", "t:{n}:writers"} {
					if rdb.Exists(ctx, key).Val() == 1 {
						assert.Greater(t, rdb.PTTL(ctx, key).Val(), time.Duration(0), "%s expires", key)
					}
				}
			})
		}
	})
}

// readBelieved returns the name of rw's owner's read hold as Redis has it
// (NoToken: none): what a handle that saw every reply names it by.
func readBelieved(ctx context.Context, rdb *redis.Client, rw RW) any {
	if name, err := rdb.HGet(ctx, rw.Readers, "h:"+rw.Lock.Owner).Result(); err == nil {
		return ReadName(name)
	}
	return NoToken
}

func runRW(t *testing.T, ctx context.Context, rdb *redis.Client, s rwstep) any {
	t.Helper()
	rw := testRW(s.owner)
	req := s.owner + ":" + s.seq
	var got any
	var err error
	switch s.op {
	case "read":
		got, err = rw.Read(ctx, rdb, req, rdb.HExists(ctx, rw.Readers, s.owner).Val(), time.Minute)
	case "write", "trywrite":
		var a Acquired
		var upgrade bool
		a, upgrade, err = rw.Write(ctx, rdb, req, TokenArg(believed(t, ctx, rdb, rw.Lock)), NewLeaseArg(time.Minute, []byte("meta")), s.op == "write", Register, time.Minute)
		got = a
		if upgrade {
			got = "upgrade"
		}
	case "runlock":
		got, err = rw.RUnlock(ctx, rdb, req, false, readBelieved(ctx, rdb, rw))
	case "unlock":
		got, _, err = rw.Unlock(ctx, rdb, req, false, TokenArg(believed(t, ctx, rdb, rw.Lock)))
	case "leaver", "leavew":
		got, _, err = rw.Leave(ctx, rdb, req, s.op == "leavew", false)
	case "renewr", "beat":
		script, keys, args := rw.Renewal(s.op == "beat", time.Minute)
		if s.op == "renewr" {
			args = append(args, readBelieved(ctx, rdb, rw))
		}
		got, err = script.Run(ctx, rdb, keys, args...).Int64()
	case "force":
		got, err = forceReply(rw.Force(ctx, rdb, "", fenceNow(t, ctx, rdb, rw.Lock.Fence), forceReq()))
	case "lapse":
		err = rdb.ZAddXX(ctx, rw.Leases, redis.Z{Score: 1, Member: s.owner}).Err()
	case "die":
		err = rdb.ZAddXX(ctx, rw.Writers, redis.Z{Score: 1, Member: s.owner}).Err()
	case "expire":
		err = rdb.Del(ctx, rw.Lock.Hash).Err()
	default:
		t.Fatalf("unknown op %q", s.op)
	}
	require.NoError(t, err, "%s by %s", s.op, s.owner)
	return got
}

// A key of another type is reported as ErrWrongType, and no script writes.
func TestRWWrongType(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		for _, key := range []string{"t:{n}:lock", "t:{n}:readers", "t:{n}:leases", "t:{n}:writers", "t:{n}:fence"} {
			require.NoError(t, rdb.FlushAll(ctx).Err())
			require.NoError(t, rdb.Set(ctx, key, "x", 0).Err())
			rw := testRW("a")
			_, err := rw.Read(ctx, rdb, "a:1", false, time.Minute)
			assert.ErrorIs(t, err, errs.ErrWrongType, key)
			_, _, err = rw.Write(ctx, rdb, "a:2", TokenArg(0), NewLeaseArg(time.Minute, nil), true, Register, time.Minute)
			assert.ErrorIs(t, err, errs.ErrWrongType, key)
			_, err = rw.RExtend(ctx, rdb, extendReq(), time.Minute, ReadName("a:1"))
			assert.ErrorIs(t, err, errs.ErrWrongType, key)
			keys, err := rdb.Keys(ctx, "*").Result()
			require.NoError(t, err)
			assert.Equal(t, []string{key}, keys, "nothing written beside %s", key)
			assert.Equal(t, "x", rdb.Get(ctx, key).Val())
		}
	})
}

// A Client's request markers of the wrong type are refused before the first
// write, also when there are read leases to purge first.
func TestRWWrongTypeLeft(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		for _, readers := range []bool{false, true} {
			require.NoError(t, rdb.FlushAll(ctx).Err())
			if readers {
				_, err := testRW("b").Read(ctx, rdb, "b:1", false, time.Minute)
				require.NoError(t, err)
			}
			a := testRW("a")
			require.NoError(t, rdb.Set(ctx, a.Lock.Marks, "x", 0).Err())
			before := dump(t, rdb)
			_, err := a.Read(ctx, rdb, "a:1", false, time.Minute)
			assert.ErrorIs(t, err, errs.ErrWrongType, "read, readers %v", readers)
			_, _, err = a.Write(ctx, rdb, "a:2", TokenArg(0), NewLeaseArg(time.Minute, nil), true, Register, time.Minute)
			assert.ErrorIs(t, err, errs.ErrWrongType, "write, readers %v", readers)
			assert.Equal(t, before, dump(t, rdb), "keys changed, readers %v", readers)
		}
	})
}

// The writers' wake registry is only read when someone holds or waits: of
// the wrong type, it fails a writer that would register, and one that takes
// the lock while others wait, before their first write.
func TestRWWrongTypeRegistry(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		for _, held := range []string{"write", "read"} {
			require.NoError(t, rdb.FlushAll(ctx).Err())
			b := testRW("b")
			var err error
			if held == "write" {
				_, _, err = b.Write(ctx, rdb, "b:1", TokenArg(0), NewLeaseArg(time.Minute, nil), false, NoRegistry, time.Minute)
			} else {
				_, err = b.Read(ctx, rdb, "b:1", false, time.Minute)
			}
			require.NoError(t, err)
			require.NoError(t, rdb.Set(ctx, b.WriterWaiters, "x", 0).Err())
			before := dump(t, rdb)
			_, _, err = testRW("a").Write(ctx, rdb, "a:1", TokenArg(0), NewLeaseArg(time.Minute, nil), true, Register, time.Minute)
			assert.ErrorIs(t, err, errs.ErrWrongType, "a writer registering while %s is held", held)
			assert.Equal(t, before, dump(t, rdb), "keys changed while %s is held", held)
		}
	})
}

// A release wakes one registered writer's Client, oldest registration
// first, with "1" on its Client's channel; a woken Client's last writer
// that leaves while the lock is free passes the wake on; a polling writer
// ("w") waits without registering; the Client's heartbeat (Beat) renews
// its registration until a wake takes it out. A writer that takes the lock
// with other local writers behind it (Keep) keeps its Client registered,
// and its release wakes that Client (not the readers) even though no
// writer is in KEYS[5].
func TestRWWakesOneWriter(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		sub := rdb.PSubscribe(ctx, "t:{n}:*")
		defer sub.Close()
		_, err := sub.Receive(ctx)
		require.NoError(t, err)
		lease := NewLeaseArg(time.Minute, nil)
		h, x, y, p := testRW("h"), testRW("x"), testRW("y"), testRW("p")
		_, _, err = h.Write(ctx, rdb, "h:1", TokenArg(0), lease, false, NoRegistry, time.Minute)
		require.NoError(t, err)
		for _, w := range []struct {
			rw  RW
			req string
			reg Registry
		}{{x, "x:1", Register}, {p, "p:1", NoRegistry}, {y, "y:1", Register}} {
			a, _, err := w.rw.Write(ctx, rdb, w.req, TokenArg(0), lease, true, w.reg, time.Minute)
			require.NoError(t, err)
			require.False(t, a.OK)
			if srv.Real {
				time.Sleep(2 * time.Millisecond) // distinct deadlines: x registered first
			} else {
				srv.Mini.FastForward(2 * time.Millisecond)
			}
		}
		assert.Equal(t, int64(3), rdb.ZCard(ctx, h.Writers).Val(), "every waiting writer holds readers back")
		assert.Equal(t, []string{"x", "y"}, rdb.ZRange(ctx, h.WriterWaiters, 0, -1).Val(), "the polling writer is not registered")

		script, keys, args := x.Beat("x", time.Minute+time.Second)
		renewed, err := script.Run(ctx, rdb, keys, args...).Int64()
		require.NoError(t, err)
		assert.Equal(t, int64(1), renewed)
		assert.Equal(t, []string{"y", "x"}, rdb.ZRange(ctx, h.WriterWaiters, 0, -1).Val(), "x renewed last")

		n, _, err := h.Unlock(ctx, rdb, "h:2", false, TokenArg(believed(t, ctx, rdb, h.Lock)))
		require.NoError(t, err)
		require.Zero(t, n)
		msgs := receiveAll(t, rdb, sub, "t:{n}:end")
		require.Len(t, msgs, 1, "one writer woken")
		assert.Equal(t, "t:{n}:wch:y", msgs[0].Channel)
		assert.Equal(t, "1", msgs[0].Payload)
		assert.Equal(t, []string{"x"}, rdb.ZRange(ctx, h.WriterWaiters, 0, -1).Val(), "the woken Client left the registry")

		script, keys, args = y.Beat("y", time.Hour)
		renewed, err = script.Run(ctx, rdb, keys, args...).Int64()
		require.NoError(t, err)
		assert.Zero(t, renewed, "a heartbeat does not register a woken Client again")
		script, keys, args = y.Renewal(true, time.Hour)
		renewed, err = script.Run(ctx, rdb, keys, args...).Int64()
		require.NoError(t, err)
		assert.Equal(t, int64(1), renewed, "y still waits")
		assert.Equal(t, []string{"x"}, rdb.ZRange(ctx, h.WriterWaiters, 0, -1).Val())

		left, _, err := y.Leave(ctx, rdb, "y:1", true, false)
		require.NoError(t, err)
		assert.False(t, left)
		msgs = receiveAll(t, rdb, sub, "t:{n}:end")
		require.Len(t, msgs, 1, "the wake passed on")
		assert.Equal(t, "t:{n}:wch:x", msgs[0].Channel)
		assert.Equal(t, "1", msgs[0].Payload)

		a, _, err := x.Write(ctx, rdb, "x:1", TokenArg(0), lease, true, Keep, time.Minute)
		require.NoError(t, err)
		assert.True(t, a.OK)
		assert.Equal(t, []string{"x"}, rdb.ZRange(ctx, h.WriterWaiters, 0, -1).Val(), "other writers of x wait: x stays registered")
		left, _, err = p.Leave(ctx, rdb, "p:1", true, true)
		require.NoError(t, err)
		assert.False(t, left)
		assert.Empty(t, receiveAll(t, rdb, sub, "t:{n}:end"), "x holds the lock: the last waiting writer's leave wakes nobody")
		assert.Zero(t, rdb.Exists(ctx, h.Writers).Val())
		n, wake, err := x.Unlock(ctx, rdb, "x:2", false, TokenArg(believed(t, ctx, rdb, x.Lock)))
		require.NoError(t, err)
		require.Zero(t, n)
		assert.Equal(t, "1", wake, "x's waiting writers go first, woken by x's own Client")
		assert.Empty(t, receiveAll(t, rdb, sub, "t:{n}:end"), "nothing published: not even to the readers")
		assert.Zero(t, rdb.Exists(ctx, h.Writers, h.WriterWaiters).Val())

		_, _, err = h.Write(ctx, rdb, "h:3", TokenArg(0), lease, false, NoRegistry, time.Minute)
		require.NoError(t, err)
		n, _, err = h.Unlock(ctx, rdb, "h:4", false, TokenArg(believed(t, ctx, rdb, h.Lock)))
		require.NoError(t, err)
		require.Zero(t, n)
		msgs = receiveAll(t, rdb, sub, "t:{n}:end")
		require.Len(t, msgs, 1, "no writer waits or is registered: the release wakes the readers")
		assert.Equal(t, "t:{n}:ch", msgs[0].Channel)
		assert.Equal(t, "*", msgs[0].Payload)
	})
}

// RExtend gives a read hold a fixed lease: a renewal sent before it and
// landing after it leaves that lease alone; a read hold that is gone is
// not extended; a fresh hold of the owner is renewed again.
func TestRWExtendOutlastsLateRenewal(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		rw := testRW("a")
		ok, err := rw.RExtend(ctx, rdb, extendReq(), 10*time.Second, NoToken)
		require.NoError(t, err)
		assert.False(t, ok, "no read hold to extend")
		assert.Empty(t, rdb.Keys(ctx, "*").Val(), "nothing written")

		_, err = rw.Read(ctx, rdb, "a:1", false, time.Second)
		require.NoError(t, err)
		ok, err = rw.RExtend(ctx, rdb, extendReq(), 10*time.Second, ReadName("a:1"))
		require.NoError(t, err)
		require.True(t, ok)
		renew := func(ttl time.Duration) int {
			script, keys, args := rw.Renewal(false, ttl)
			n, err := script.Run(ctx, rdb, keys, append(args, readBelieved(ctx, rdb, rw))...).Int()
			require.NoError(t, err)
			return n
		}
		assert.Equal(t, 1, renew(300*time.Millisecond), "still held")
		lease := func() time.Duration {
			now, err := rdb.Time(ctx).Result()
			require.NoError(t, err)
			return time.Duration(rdb.ZScore(ctx, rw.Leases, "a").Val()-float64(now.UnixMilli())) * time.Millisecond
		}
		assert.Greater(t, lease(), 9*time.Second, "the late renewal left the fixed lease alone")
		assert.Greater(t, rdb.PTTL(ctx, rw.Readers).Val(), 9*time.Second, "the readers' keys outlive it")

		n, err := rw.RUnlock(ctx, rdb, "a:2", true, ReadName("a:1"))
		require.NoError(t, err)
		require.Equal(t, int64(0), n)
		assert.Zero(t, rdb.Exists(ctx, rw.Readers, rw.Leases).Val(), "the mark goes with the hold")
		_, err = rw.Read(ctx, rdb, "a:3", false, time.Second)
		require.NoError(t, err)
		assert.Equal(t, 1, renew(20*time.Second))
		assert.Greater(t, lease(), 19*time.Second, "a fresh hold is renewed")

		// An orphan (a hold the handle no longer knows) that was extended is
		// taken over as a fresh hold, renewed again.
		ok, err = rw.RExtend(ctx, rdb, extendReq(), 30*time.Second, ReadName("a:3"))
		require.NoError(t, err)
		require.True(t, ok)
		_, err = rw.Read(ctx, rdb, "a:4", false, time.Second)
		require.NoError(t, err)
		assert.False(t, rdb.HExists(ctx, rw.Readers, "x:a").Val(), "the fresh hold has no fixed lease")
		assert.Equal(t, 1, renew(40*time.Second))
		assert.Greater(t, lease(), 39*time.Second)

		// A lease that ran out is not extended.
		_, err = testRW("b").Read(ctx, rdb, "b:1", false, 20*time.Millisecond)
		require.NoError(t, err)
		time.Sleep(40 * time.Millisecond)
		ok, err = testRW("b").RExtend(ctx, rdb, extendReq(), 10*time.Second, ReadName("b:1"))
		require.NoError(t, err)
		assert.False(t, ok, "the lease had run out")
	})
}
