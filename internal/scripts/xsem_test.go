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

func testXSem() XSem {
	return XSem{Permits: "t:{x}:permits", Leases: "t:{x}:leases", Tokens: "t:{x}:tokens", Fence: "t:{x}:fence",
		Done: "t:{x}:done", Waiters: "t:{x}:waiters", Kind: "rsemaphore-expirable", Publish: "PUBLISH", Channel: "t:{x}:ch"}
}

// xstep is one call of an expirable semaphore script on the permit id, or
// one change behind the scripts' back, and what it must reply.
type xstep struct {
	op   string // try, set, add (arg: n, an int); acquire, extend (arg: lease); release (arg: request id); leave, state; lapse (id's lease runs out)
	id   string
	arg  any
	want any // XAttempt (not OK: Wait is the expected hint, to 2s), SetResult, bool, XState; an error (errors.Is, and the keys unchanged); nil: not checked
}

// Shorthands for the replies.
func xtook(token uint64, free int64) XAttempt { return XAttempt{OK: true, Token: token, Free: free} }
func busy(wait time.Duration, free int64) XAttempt {
	return XAttempt{Wait: wait, Free: free}
}

func TestXSemScripts(t *testing.T) {
	cases := []struct {
		name  string
		steps []xstep
		state XState
	}{
		{"unset: acquire is ErrNotSet; nothing to release or extend", []xstep{
			{"acquire", "p1", time.Minute, errs.ErrNotSet},
			{"release", "p1", "r1", false},
			{"extend", "p1", time.Minute, false},
			{"state", "", nil, XState{}},
		}, XState{}},
		{"try sets only once; set and add", []xstep{
			{"try", "", 2, changed(2, 2)},
			{"try", "", 5, SetResult{Total: 2, Available: 2}},
			{"acquire", "p1", time.Minute, xtook(1, 1)},
			{"set", "", 3, changed(3, 2)},
			{"add", "", -2, changed(1, 0)},
			{"add", "", -2, errs.ErrInvalidArgument},
			{"set", "", 0, changed(0, -1)},
			{"add", "", 2, changed(2, 1)},
		}, XState{Set: true, Total: 2, Held: 1}},
		{"add counts unset as 0", []xstep{
			{"add", "", 2, changed(2, 2)},
		}, XState{Set: true, Total: 2}},
		{"tokens increase with every acquire", []xstep{
			{"try", "", 2, changed(2, 2)},
			{"acquire", "p1", time.Minute, xtook(1, 1)},
			{"acquire", "p2", time.Minute, xtook(2, 0)},
			{"release", "p1", "r1", true},
			{"acquire", "p3", time.Minute, xtook(3, 0)},
		}, XState{Set: true, Total: 2, Held: 2}},
		{"a retried acquire returns the same token and takes no second permit", []xstep{
			{"try", "", 2, changed(2, 2)},
			{"acquire", "p1", time.Minute, xtook(1, 1)},
			{"acquire", "p1", time.Minute, xtook(1, 1)},
			{"acquire", "p2", time.Minute, xtook(2, 0)},
		}, XState{Set: true, Total: 2, Held: 2}},
		{"busy waits for the soonest expiry", []xstep{
			{"try", "", 2, changed(2, 2)},
			{"acquire", "p1", 30 * time.Second, xtook(1, 1)},
			{"acquire", "p2", 10 * time.Second, xtook(2, 0)},
			{"acquire", "p3", time.Minute, busy(10*time.Second, 0)},
			{"release", "p2", "r1", true},
			{"acquire", "p3", time.Minute, xtook(3, 0)},
			{"acquire", "p4", time.Minute, busy(30*time.Second, 0)},
		}, XState{Set: true, Total: 2, Held: 2}},
		{"under a shrunk total, busy waits for the (held-total+1)-th soonest", []xstep{
			{"try", "", 3, changed(3, 3)},
			{"acquire", "p1", 30 * time.Second, xtook(1, 2)},
			{"acquire", "p2", 10 * time.Second, xtook(2, 1)},
			{"acquire", "p3", 20 * time.Second, xtook(3, 0)},
			{"acquire", "p4", time.Minute, busy(10*time.Second, 0)},
			{"set", "", 2, changed(2, -1)},
			{"acquire", "p4", time.Minute, busy(20*time.Second, -1)},
			{"add", "", -1, changed(1, -2)},
			{"acquire", "p4", time.Minute, busy(30*time.Second, -2)},
		}, XState{Set: true, Total: 1, Held: 3}},
		{"expired permits are reclaimed", []xstep{
			{"try", "", 1, changed(1, 1)},
			{"acquire", "p1", time.Minute, xtook(1, 0)},
			{"lapse", "p1", nil, nil},
			{"state", "", nil, XState{Set: true, Total: 1, Held: 0}},
			{"acquire", "p2", time.Minute, xtook(2, 0)},
			{"release", "p1", "r1", false},
			{"extend", "p1", time.Minute, false},
		}, XState{Set: true, Total: 1, Held: 1}},
		{"release: held, retried, by another request, expired", []xstep{
			{"try", "", 2, changed(2, 2)},
			{"acquire", "p1", time.Minute, xtook(1, 1)},
			{"acquire", "p2", time.Minute, xtook(2, 0)},
			{"release", "p1", "r1", true},
			{"release", "p1", "r1", true},
			{"release", "p1", "r2", false},
			{"release", "p9", "r3", false},
			{"lapse", "p2", nil, nil},
			{"release", "p2", "r4", false},
		}, XState{Set: true, Total: 2}},
		{"extend pushes the deadline of a held permit only", []xstep{
			{"try", "", 1, changed(1, 1)},
			{"acquire", "p1", 10 * time.Second, xtook(1, 0)},
			{"extend", "p1", time.Minute, true},
			{"acquire", "p2", time.Minute, busy(time.Minute, 0)},
			{"extend", "p9", time.Minute, false},
			{"lapse", "p1", nil, nil},
			{"extend", "p1", time.Minute, false},
		}, XState{Set: true, Total: 1}},
		{"leave gives back, and a late copy of the acquire is refused", []xstep{
			{"try", "", 1, changed(1, 1)},
			{"acquire", "p1", time.Minute, xtook(1, 0)},
			{"leave", "p1", nil, true},
			{"leave", "p1", nil, false},
			{"acquire", "p1", time.Minute, errs.ErrNotAcquired},
			{"leave", "p2", nil, false},
			{"acquire", "p2", time.Minute, errs.ErrNotAcquired},
			{"acquire", "p3", time.Minute, xtook(2, 0)},
		}, XState{Set: true, Total: 1, Held: 1}},
		{"a total of 0 could never be acquired", []xstep{
			{"set", "", 0, changed(0, 0)},
			{"acquire", "p1", time.Minute, errs.ErrInvalidArgument},
		}, XState{Set: true}},
	}
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		x := testXSem()
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				require.NoError(t, rdb.FlushAll(ctx).Err())
				ranks := &tokenRanks{}
				for i, st := range tc.steps {
					runXStep(t, ctx, rdb, ranks, fmt.Sprintf("step %d: %s %s %v", i, st.op, st.id, st.arg), st)
				}
				state, err := x.State(ctx, rdb)
				require.NoError(t, err)
				assert.Equal(t, tc.state, state, "state")
				ids, err := rdb.ZRange(ctx, x.Leases, 0, -1).Result()
				require.NoError(t, err)
				fields, err := rdb.HKeys(ctx, x.Tokens).Result()
				require.NoError(t, err)
				var withToken []string
				for _, f := range fields {
					if id, fixed := strings.CutPrefix(f, "f:"); fixed {
						assert.Contains(t, ids, id, "a fixed flag outlives its permit")
					} else {
						withToken = append(withToken, f)
					}
				}
				assert.ElementsMatch(t, ids, withToken, "tokens holds the leases' permits")
				for _, k := range []string{x.Leases, x.Tokens, x.Done} {
					if rdb.Exists(ctx, k).Val() == 1 {
						assert.Greater(t, rdb.PTTL(ctx, k).Val(), time.Duration(0), "%s expires", k)
					}
				}
				if rdb.Exists(ctx, x.Permits).Val() == 1 {
					assert.Equal(t, time.Duration(-1), rdb.PTTL(ctx, x.Permits).Val(), "the permits never expire")
				}
				if rdb.Exists(ctx, x.Fence).Val() == 1 {
					assert.Greater(t, rdb.PTTL(ctx, x.Fence).Val(), FenceTTL-time.Minute, "the fence expires")
				}
			})
		}
	})
}

// runXStep runs one step and checks its reply, whose token stands for its
// rank in ranks. A step that must fail must also leave every key as it was.
func runXStep(t *testing.T, ctx context.Context, rdb *redis.Client, ranks *tokenRanks, name string, st xstep) {
	t.Helper()
	wantErr, isErr := st.want.(error)
	var before map[string]string
	if isErr {
		before = snapshot(t, rdb)
	}
	got, err := xOp(ctx, rdb, st)
	want, isBusy := st.want.(XAttempt)
	isBusy = isBusy && !want.OK
	switch {
	case isErr:
		assert.ErrorIs(t, err, wantErr, name)
		assert.Equal(t, before, snapshot(t, rdb), "%s: refused, yet keys changed", name)
	case st.want == nil:
		require.NoError(t, err, name)
	case isBusy: // the hint depends on the clock: within 2s below the lease's end
		require.NoError(t, err, name)
		a, ok := got.(XAttempt)
		require.True(t, ok, "%s: got %#v", name, got)
		assert.False(t, a.OK, name)
		assert.Equal(t, want.Free, a.Free, "%s: free", name)
		assert.LessOrEqual(t, a.Wait, want.Wait, "%s: wait", name)
		assert.Greater(t, a.Wait, want.Wait-2*time.Second, "%s: wait", name)
	default:
		require.NoError(t, err, name)
		checkReply(t, name, st.want, ranks.of(t, got))
	}
}

func xOp(ctx context.Context, rdb *redis.Client, st xstep) (any, error) {
	x := testXSem()
	lease, _ := st.arg.(time.Duration)
	switch st.op {
	case "try", "set", "add":
		mode := map[string]string{"try": SetIfUnset, "set": SetTotal, "add": AddTotal}[st.op]
		return x.Set(ctx, rdb, stepReq(st.id), mode, int64(st.arg.(int)))
	case "acquire":
		return x.Acquire(ctx, rdb, st.id, lease, SemTry, time.Minute)
	case "wait": // a blocking acquire that registers when refused
		return x.Acquire(ctx, rdb, st.id, lease, SemRegister, time.Minute)
	case "release":
		ok, _, err := x.Release(ctx, rdb, st.id, st.arg.(string), "")
		return ok, err
	case "extend":
		return x.Extend(ctx, rdb, extendReq(), st.id, lease)
	case "leave":
		return x.Leave(ctx, rdb, st.id, false, time.Minute, SemUnregistered)
	case "leavereg": // the leave of a request that registered
		return x.Leave(ctx, rdb, st.id, true, time.Minute, 0)
	case "state":
		return x.State(ctx, rdb)
	case "lapse":
		return nil, rdb.ZAddXX(ctx, x.Leases, redis.Z{Score: 1, Member: st.id}).Err()
	}
	return nil, fmt.Errorf("unknown op %q", st.op)
}

func TestXSemSHA(t *testing.T) {
	require.Len(t, xsemScripts, 6)
	for _, s := range xsemScripts {
		assert.Equal(t, s.Hash(), SHA(s.Name()))
		assert.True(t, strings.HasPrefix(s.Name(), "xsem_"), s.Name())
	}
	assert.Empty(t, SHA("xsem_lib"), "the prelude is not a script")
	assert.NotEqual(t, SHA("sem_acquire"), SHA("xsem_acquire"))
}
