package scripts

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/redistest"
)

func testLock(owner string) Lock {
	return Lock{Hash: "t:{n}:lock", Fence: "t:{n}:fence", Marks: "t:{n}:rel:" + owner,
		Waiters: "t:{n}:waiters", Kind: "rlock", Owner: owner, Publish: "PUBLISH", Channel: "t:{n}:ch"}
}

// checkReply asserts a script's reply against a step's want: an Acquired
// with Wait > 0 stands for "busy, with some positive wait hint", whose exact
// value depends on the clock; anything else must be equal. Tables give
// tokens as ranks (see tokenRanks), so got's token is a rank too.
func checkReply(t *testing.T, step string, want, got any) {
	t.Helper()
	if w, ok := want.(Acquired); ok && w.Wait > 0 {
		a, ok := got.(Acquired)
		require.True(t, ok, "%s: got %#v, want an Acquired", step, got)
		assert.False(t, a.OK, step)
		assert.Greater(t, a.Wait, time.Duration(0), "%s: wait hint", step)
		assert.LessOrEqual(t, a.Wait, time.Minute, "%s: wait hint", step)
		return
	}
	assert.Equal(t, want, got, step)
}

// step is one script call against the lock and what it must reply.
type step struct {
	op    string // acquire, release, leave, force, renew, renewold (an earlier hold's token)
	owner string
	req   string
	want  any // Acquired (with Wait > 0 meaning "some positive wait"), int64, bool
}

func TestLockScripts(t *testing.T) {
	cases := []struct {
		name  string
		steps []step
		count int64 // a's hold count afterwards as State reports it (0: free)
	}{
		{"fresh acquire", []step{{"acquire", "a", "1", Acquired{OK: true, Token: 1, Count: 1}}}, 1},
		{"re-entry keeps the token", []step{
			{"acquire", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"acquire", "a", "2", Acquired{OK: true, Token: 1, Count: 2}},
		}, 2},
		{"retried acquire is applied once", []step{
			{"acquire", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"acquire", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
		}, 1},
		{"other owner waits", []step{
			{"acquire", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"acquire", "b", "1", Acquired{Wait: 1}},
		}, 1},
		{"release to zero frees", []step{
			{"acquire", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"release", "a", "2", int64(0)},
		}, 0},
		{"retried final release replies 0, not -1", []step{
			{"acquire", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"release", "a", "2", int64(0)},
			{"release", "a", "2", int64(0)},
		}, 0},
		{"retried release decrements once", []step{
			{"acquire", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"acquire", "a", "2", Acquired{OK: true, Token: 1, Count: 2}},
			{"release", "a", "3", int64(1)},
			{"release", "a", "3", int64(1)},
		}, 1},
		{"release by another owner is refused", []step{
			{"acquire", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"release", "b", "1", int64(-1)},
		}, 1},
		{"release of a free lock is refused", []step{{"release", "a", "1", int64(-1)}}, 0},
		{"retried final release is recognised after other owners took and released", []step{
			{"acquire", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"release", "a", "2", int64(0)},
			{"acquire", "b", "1", Acquired{OK: true, Token: 2, Count: 1}},
			{"release", "b", "2", int64(0)},
			{"release", "a", "2", int64(0)},
			{"release", "a", "3", int64(-1)},
		}, 0},
		{"next hold gets the next token", []step{
			{"acquire", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"release", "a", "2", int64(0)},
			{"acquire", "b", "1", Acquired{OK: true, Token: 2, Count: 1}},
		}, 0},
		{"leave undoes an applied acquire", []step{
			{"acquire", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"leave", "a", "1", true},
		}, 0},
		{"leave undoes only the named request", []step{
			{"acquire", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"acquire", "a", "2", Acquired{OK: true, Token: 1, Count: 2}},
			{"leave", "a", "1", false},
			{"leave", "a", "2", true},
			{"leave", "a", "2", false},
		}, 1},
		{"renew by the holder", []step{
			{"acquire", "a", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"renew", "a", "", int64(1)},
			{"renew", "b", "", int64(0)},
			{"renewold", "a", "", int64(0)},
		}, 1},
		{"force frees whoever holds", []step{
			{"acquire", "b", "1", Acquired{OK: true, Token: 1, Count: 1}},
			{"force", "a", "", true},
			{"force", "a", "", false},
			{"renew", "b", "", int64(0)},
		}, 0},
	}
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				require.NoError(t, rdb.FlushAll(ctx).Err())
				ranks := &tokenRanks{}
				for i, s := range tc.steps {
					checkReply(t, fmt.Sprintf("step %d: %s by %s", i, s.op, s.owner), s.want, ranks.of(t, run(t, ctx, rdb, s)))
				}
				st, err := testLock("a").State(ctx, rdb)
				require.NoError(t, err)
				if tc.count == 0 {
					assert.False(t, st.Held && st.Owner == "a", "a still holds: %+v", st)
				} else {
					assert.Equal(t, "a", st.Owner)
					assert.Equal(t, tc.count, st.Count)
				}
			})
		}
	})
}

// believed returns the token of l's owner's hold as Redis has it (0:
// none): what a handle that saw every reply believes it holds.
func believed(t *testing.T, ctx context.Context, rdb *redis.Client, l Lock) uint64 {
	t.Helper()
	st, err := l.State(ctx, rdb)
	require.NoError(t, err)
	if st.Owner != l.Owner {
		return 0
	}
	return st.Token
}

func run(t *testing.T, ctx context.Context, rdb *redis.Client, s step) any {
	t.Helper()
	l := testLock(s.owner)
	var got any
	var err error
	switch s.op {
	case "acquire":
		got, err = l.Acquire(ctx, rdb, s.req, TokenArg(believed(t, ctx, rdb, l)), NewLeaseArg(time.Minute, []byte("meta")), NoRegistry)
	case "release":
		got, _, err = l.Release(ctx, rdb, s.req, false, TokenArg(believed(t, ctx, rdb, l)))
	case "leave":
		got, _, err = l.Leave(ctx, rdb, s.req, false)
	case "force":
		got, err = forceReply(l.Force(ctx, rdb, "", fenceNow(t, ctx, rdb, l.Fence), forceReq()))
	case "renew", "renewold":
		token := believed(t, ctx, rdb, l)
		if s.op == "renewold" { // a late renewal of an earlier hold of the owner
			token--
		}
		script, keys, args := l.Renewal(time.Minute, token)
		got, err = script.Run(ctx, rdb, keys, args...).Int64()
	default:
		t.Fatalf("unknown op %q", s.op)
	}
	require.NoError(t, err, "%s by %s", s.op, s.owner)
	return got
}

func TestLockState(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		l := testLock("a")
		st, err := l.State(ctx, rdb)
		require.NoError(t, err)
		assert.False(t, st.Held)

		before := time.Now().Add(-time.Second)
		a, err := l.Acquire(ctx, rdb, "1", TokenArg(0), NewLeaseArg(time.Minute, []byte{0x81, 0xa1, 'h'}), NoRegistry)
		require.NoError(t, err)
		st, err = l.State(ctx, rdb)
		require.NoError(t, err)
		assert.Equal(t, "a", st.Owner)
		assert.Equal(t, int64(1), st.Count)
		assert.Equal(t, a.Token, st.Token)
		assert.Equal(t, []byte{0x81, 0xa1, 'h'}, st.Meta, "binary metadata survives")
		assert.True(t, st.AcquiredAt.After(before), "acquired at %v", st.AcquiredAt)
		assert.Greater(t, st.Remaining, 50*time.Second)
	})
}

// A key of another type, or a hash another primitive wrote, is refused with
// ErrWrongType by every script, and left exactly as it was.
func TestLockWrongType(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		l := testLock("a")
		setups := map[string]func(){
			"string at lock":   func() { rdb.Set(ctx, l.Hash, "x", 0) },
			"foreign hash":     func() { rdb.HSet(ctx, l.Hash, "field", "x") },
			"other kind":       func() { rdb.HSet(ctx, l.Hash, "k", "rfairlock", "o", "z", "c", 1) },
			"string at fence":  func() { rdb.Set(ctx, l.Fence, "x", 0) },
			"list at lock key": func() { rdb.RPush(ctx, l.Hash, "x") },
		}
		for name, setup := range setups {
			t.Run(name, func(t *testing.T) {
				require.NoError(t, rdb.FlushAll(ctx).Err())
				setup()
				before := dump(t, rdb)
				_, err := l.Acquire(ctx, rdb, "1", TokenArg(0), NewLeaseArg(time.Minute, nil), NoRegistry)
				assert.True(t, errors.Is(err, errs.ErrWrongType), "acquire: %v", err)
				if name == "string at fence" {
					return // the lock hash itself is fine for the other scripts
				}
				_, _, err = l.Release(ctx, rdb, "2", false, NoToken)
				assert.True(t, errors.Is(err, errs.ErrWrongType), "release: %v", err)
				_, _, err = l.Leave(ctx, rdb, "1", false)
				assert.True(t, errors.Is(err, errs.ErrWrongType), "leave: %v", err)
				_, err = l.Force(ctx, rdb, "", fenceNow(t, ctx, rdb, l.Fence), forceReq())
				assert.True(t, errors.Is(err, errs.ErrWrongType), "force: %v", err)
				_, err = l.State(ctx, rdb)
				assert.True(t, errors.Is(err, errs.ErrWrongType), "state: %v", err)
				assert.Equal(t, before, dump(t, rdb), "keys changed")
			})
		}
	})
}

// dump returns every key with its type, for comparing before and after.
func dump(t *testing.T, rdb *redis.Client) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, "*").Result()
	require.NoError(t, err)
	out := map[string]string{}
	for _, k := range keys {
		out[k] = rdb.Type(ctx, k).Val() + ":" + rdb.Dump(ctx, k).Val()
	}
	return out
}

// A renewal of the watchdog sent before Extend and landing after it leaves
// the extended lease alone; a fresh hold of the same key is renewed again.
func TestExtendOutlastsLateRenewal(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		l := testLock("a")
		got, err := l.Acquire(ctx, rdb, "a:1", NoToken, NewLeaseArg(time.Second, nil), NoRegistry)
		require.NoError(t, err)
		tok := TokenArg(got.Token)
		ok, err := l.Extend(ctx, rdb, "a:9", 10*time.Second, tok, []byte("meta"))
		require.NoError(t, err)
		require.True(t, ok)
		script, keys, args := l.Renewal(300*time.Millisecond, tok)
		n, err := script.Run(ctx, rdb, keys, args...).Int()
		require.NoError(t, err)
		assert.Equal(t, 1, n, "still held")
		assert.Greater(t, rdb.PTTL(ctx, l.Hash).Val(), 9*time.Second, "the late renewal left the fixed lease alone")

		_, _, err = l.Release(ctx, rdb, "a:2", true, TokenArg(believed(t, ctx, rdb, l)))
		require.NoError(t, err)
		got, err = l.Acquire(ctx, rdb, "a:3", NoToken, NewLeaseArg(time.Second, nil), NoRegistry)
		require.NoError(t, err)
		script, keys, args = l.Renewal(20*time.Second, TokenArg(got.Token))
		_, err = script.Run(ctx, rdb, keys, args...).Int()
		require.NoError(t, err)
		assert.Greater(t, rdb.PTTL(ctx, l.Hash).Val(), 19*time.Second, "a fresh hold is renewed")
	})
}
