package scripts

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/redistest"
)

// Every script that writes drops the permits whose lease has ended, with
// their tokens; State counts them out but writes nothing.
func TestXSemReclaim(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		x := testXSem()
		for name, script := range map[string]func() error{
			"acquire":       func() error { _, err := x.Acquire(ctx, rdb, "p3", time.Minute, SemTry, time.Minute); return err },
			"release other": func() error { _, _, err := x.Release(ctx, rdb, "p9", "r1", ""); return err },
			"leave other":   func() error { _, err := x.Leave(ctx, rdb, "p9", false, time.Minute, SemUnregistered); return err },
			"try":           func() error { _, err := x.Set(ctx, rdb, stepReq(""), SetIfUnset, 5); return err },
			"set":           func() error { _, err := x.Set(ctx, rdb, stepReq(""), SetTotal, 5); return err },
		} {
			t.Run(name, func(t *testing.T) {
				require.NoError(t, rdb.FlushAll(ctx).Err())
				ranks := &tokenRanks{}
				for i, st := range []xstep{
					{"try", "", 2, nil},
					{"acquire", "p1", time.Minute, xtook(1, 1)},
					{"acquire", "p2", time.Minute, xtook(2, 0)},
					{"lapse", "p1", nil, nil},
					{"state", "", nil, XState{Set: true, Total: 2, Held: 1}},
				} {
					runXStep(t, ctx, rdb, ranks, fmt.Sprintf("step %d: %s", i, st.op), st)
				}
				assert.True(t, rdb.HExists(ctx, x.Tokens, "p1").Val(), "state wrote")
				require.NoError(t, script())
				assert.ErrorIs(t, rdb.ZScore(ctx, x.Leases, "p1").Err(), redis.Nil, "p1's lease")
				assert.False(t, rdb.HExists(ctx, x.Tokens, "p1").Val(), "p1's token")
				assert.Equal(t, strconv.FormatUint(ranks.seen[1], 10), rdb.HGet(ctx, x.Tokens, "p2").Val(), "p2's token")
			})
		}
	})
}

// Leases run out on the server's clock, and the leases and tokens keys
// with the last of them; the permits hash stays, and the fence for a day.
func TestXSemKeyTTL(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		x := testXSem()
		ttl := func(k string) time.Duration { return rdb.PTTL(ctx, k).Val() }
		_, err := x.Set(ctx, rdb, stepReq(""), SetIfUnset, 2)
		require.NoError(t, err)
		_, err = x.Acquire(ctx, rdb, "p1", 2*time.Minute, SemTry, time.Minute)
		require.NoError(t, err)
		_, err = x.Acquire(ctx, rdb, "p2", time.Minute, SemTry, time.Minute)
		require.NoError(t, err)
		for _, k := range []string{x.Leases, x.Tokens} {
			assert.Greater(t, ttl(k), 110*time.Second, "%s lives as long as the last lease", k)
			assert.LessOrEqual(t, ttl(k), 2*time.Minute, k)
		}
		ok, err := x.Extend(ctx, rdb, extendReq(), "p2", 3*time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		for _, k := range []string{x.Leases, x.Tokens} {
			assert.Greater(t, ttl(k), 170*time.Second, "%s lives as long as an extended lease", k)
		}
		ok, _, err = x.Release(ctx, rdb, "p1", "r1", "")
		require.NoError(t, err)
		require.True(t, ok)
		assert.Greater(t, ttl(x.Done), RequestTTL-5*time.Second, "done lives as long as its markers")
		assert.LessOrEqual(t, ttl(x.Done), RequestTTL)
		assert.Equal(t, time.Duration(-1), ttl(x.Permits), "permits never expire")
		assert.Greater(t, ttl(x.Fence), FenceTTL-time.Minute, "the fence lives a day after the last token")
		assert.LessOrEqual(t, ttl(x.Fence), FenceTTL)

		require.NoError(t, rdb.FlushAll(ctx).Err())
		_, err = x.Set(ctx, rdb, stepReq(""), SetIfUnset, 1)
		require.NoError(t, err)
		p1, err := x.Acquire(ctx, rdb, "p1", 20*time.Millisecond, SemTry, time.Minute)
		require.NoError(t, err)
		elapse(t, srv, rdb, 50*time.Millisecond)
		assert.Zero(t, rdb.Exists(ctx, x.Leases, x.Tokens).Val(), "leases and tokens outlived the last lease")
		assert.Equal(t, int64(2), rdb.Exists(ctx, x.Permits, x.Fence).Val())
		st, err := x.State(ctx, rdb)
		require.NoError(t, err)
		assert.Equal(t, XState{Set: true, Total: 1}, st)
		got, err := x.Acquire(ctx, rdb, "p2", time.Minute, SemTry, time.Minute)
		require.NoError(t, err)
		assert.Greater(t, got.Token, p1.Token, "the fence goes on")
		assert.Equal(t, xtook(got.Token, 0), got)
	})
}

// release, leave and set wake as many registered waiters as there are free
// permits, one Client per permit, each with one message on its own
// client's channel ("<channel>:<client>", "n:<free>"); acquire and extend
// publish nothing, and
// waiters that did not register are not woken.
func TestXSemPublish(t *testing.T) {
	const m = time.Minute
	cases := []struct {
		name  string
		steps []xstep
		msgs  []string // "<channel> <payload>"
	}{
		{"a release wakes one registered waiter; its repeat does not", []xstep{
			{"try", "", 1, nil}, {"acquire", "h:1", m, nil}, {"wait", "a:1", m, nil}, {"wait", "b:1", m, nil},
			{"extend", "h:1", m, nil}, {"release", "h:1", "r1", nil}, {"release", "h:1", "r1", nil},
		}, []string{"t:{x}:ch:a n:1"}},
		{"set wakes as many as it frees", []xstep{
			{"try", "", 1, nil}, {"acquire", "h:1", m, nil}, {"wait", "a:1", m, nil}, {"wait", "b:1", m, nil},
			{"wait", "c:1", m, nil}, {"add", "", 2, nil},
		}, []string{"t:{x}:ch:a n:2", "t:{x}:ch:b n:1"}},
		{"a woken waiter that gives up passes the wake on", []xstep{
			{"try", "", 1, nil}, {"acquire", "h:1", m, nil}, {"wait", "a:1", m, nil}, {"wait", "b:1", m, nil},
			{"release", "h:1", "r1", nil}, {"leavereg", "a:1", nil, nil},
		}, []string{"t:{x}:ch:a n:1", "t:{x}:ch:b n:1"}},
		{"a registered waiter that gives up before any wake passes nothing on", []xstep{
			{"try", "", 1, nil}, {"acquire", "h:1", m, nil}, {"wait", "a:1", m, nil}, {"wait", "b:1", m, nil},
			{"leavereg", "a:1", nil, nil}, {"release", "h:1", "r1", nil},
		}, []string{"t:{x}:ch:b n:1"}},
		{"a leave that gives a permit back wakes a waiter", []xstep{
			{"try", "", 1, nil}, {"acquire", "h:1", m, nil}, {"wait", "a:1", m, nil}, {"leave", "h:1", nil, nil},
		}, []string{"t:{x}:ch:a n:1"}},
		{"unregistered waiters are not woken", []xstep{
			{"try", "", 1, nil}, {"acquire", "h:1", m, nil}, {"acquire", "a:1", m, nil}, {"release", "h:1", "r1", nil},
		}, nil},
		{"a total of 0 tells each waiting client once", []xstep{
			{"try", "", 1, nil}, {"acquire", "h:1", m, nil}, {"wait", "a:1", m, nil}, {"wait", "a:2", m, nil},
			{"wait", "b:1", m, nil}, {"set", "", 0, nil},
		}, []string{"t:{x}:ch:a *", "t:{x}:ch:b *"}},
	}
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		ch := testXSem().Channel
		sub := rdb.PSubscribe(ctx, ch+"*")
		defer sub.Close()
		_, err := sub.Receive(ctx) // the confirmation
		require.NoError(t, err)
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				require.NoError(t, rdb.FlushAll(ctx).Err())
				for i, st := range tc.steps {
					runXStep(t, ctx, rdb, &tokenRanks{}, fmt.Sprintf("step %d: %s %s", i, st.op, st.id), st)
				}
				var got []string
				for _, m := range receiveAll(t, rdb, sub, ch) {
					got = append(got, m.Channel+" "+m.Payload)
				}
				assert.Equal(t, tc.msgs, got)
			})
		}
	})
}

// A copy of an acquire that reaches Redis after the permit it took was
// released (a go-redis retry whose first copy was delayed) must take
// nothing, as the counting semaphore's marker ensures and as xsem_leave
// ensures for a given-up request: the acquire's own marker refuses it, where
// without one the late copy would take a second permit under the same id,
// held by nobody until its lease ends.
func TestXSemLateAcquireAfterRelease(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		for i, st := range []xstep{
			{"try", "", 1, changed(1, 1)},
			{"acquire", "p1", time.Minute, xtook(1, 0)},
			{"release", "p1", "r1", true},
		} {
			runXStep(t, ctx, rdb, &tokenRanks{}, fmt.Sprintf("step %d: %s", i, st.op), st)
		}
		got, err := testXSem().Acquire(ctx, rdb, "p1", time.Minute, SemTry, time.Minute)
		assert.ErrorIs(t, err, errs.ErrNotAcquired, "the late copy replied %+v", got)
		st, err := testXSem().State(ctx, rdb)
		require.NoError(t, err)
		assert.Zero(t, st.Held, "the late copy took a permit")
	})
}

// A renewal that lands after Extend (sent before it, or retried) leaves
// the fixed lease as Extend set it; the fixed flag goes with the permit.
func TestXSemRenewalLeavesFixedLease(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		x := testXSem()
		_, err := x.Set(ctx, rdb, stepReq(""), SetIfUnset, 1)
		require.NoError(t, err)
		_, err = x.Acquire(ctx, rdb, "p1", time.Minute, SemTry, time.Minute)
		require.NoError(t, err)
		renew := func() int64 {
			script, keys, args := x.Renewal("p1", time.Hour)
			n, err := script.Run(ctx, rdb, keys, args...).Int64()
			require.NoError(t, err)
			return n
		}
		deadline := func() float64 { return rdb.ZScore(ctx, x.Leases, "p1").Val() }
		before := deadline()
		require.Equal(t, int64(1), renew())
		assert.Greater(t, deadline(), before+50*60*1000, "a renewal of a kept permit pushes it an hour out")

		ok, err := x.Extend(ctx, rdb, extendReq(), "p1", 2*time.Second)
		require.NoError(t, err)
		require.True(t, ok)
		fixed := deadline()
		assert.Equal(t, int64(1), renew(), "the permit is still held")
		assert.Equal(t, fixed, deadline(), "the renewal left the fixed lease alone")

		ok, _, err = x.Release(ctx, rdb, "p1", "r1", "")
		require.NoError(t, err)
		require.True(t, ok)
		assert.Zero(t, rdb.Exists(ctx, x.Tokens).Val(), "the fixed flag went with the permit")
		assert.Equal(t, int64(0), renew())
	})
}
