package scripts

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/redistest"
)

// multiLock is the lock of name for owner, under the test prefix.
func multiLock(name, owner string) Lock {
	return Lock{Hash: "t:{" + name + "}:lock", Fence: "t:{" + name + "}:fence",
		Marks:   "t:{" + name + "}:rel:" + owner,
		Waiters: "t:{" + name + "}:waiters", Kind: "rlock", Owner: owner, Publish: "PUBLISH", Channel: "t:{" + name + "}:ch"}
}

// All free names are taken at once, each with its own token; a retry of
// the request gets the same tokens and takes nothing more; a name held by
// another owner takes nothing and says which; a name the handle holds is
// kept; a left request is refused.
func TestLockMulti(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		lease := NewLeaseArg(time.Minute, []byte("m"))
		parts := func(reqs ...string) []MultiPart {
			var ps []MultiPart
			for i, name := range []string{"a", "b", "c"} {
				ps = append(ps, MultiPart{Lock: multiLock(name, "o"+name), Req: reqs[i], Held: NoToken})
			}
			return ps
		}
		got, err := AcquireMulti(ctx, rdb, "rlock", parts("oa:1", "ob:1", "oc:1"), lease)
		require.NoError(t, err)
		require.True(t, got.OK)
		require.Len(t, got.Tokens, 3)
		for _, tok := range got.Tokens {
			assert.Positive(t, tok)
		}
		again, err := AcquireMulti(ctx, rdb, "rlock", parts("oa:1", "ob:1", "oc:1"), lease)
		require.NoError(t, err)
		assert.Equal(t, got, again, "a retry finds its holds")
		for _, name := range []string{"a", "b", "c"} {
			assert.Equal(t, "1", rdb.HGet(ctx, "t:{"+name+"}:lock", "c").Val(), name)
		}

		// Another owner wants b and d: b is busy, d stays free.
		other := []MultiPart{
			{Lock: multiLock("b", "x"), Req: "x:1", Held: NoToken},
			{Lock: multiLock("d", "x"), Req: "x:2", Held: NoToken},
		}
		busy, err := AcquireMulti(ctx, rdb, "rlock", other, lease)
		require.NoError(t, err)
		assert.False(t, busy.OK)
		assert.Equal(t, 0, busy.Busy)
		assert.Greater(t, busy.Wait, 59*time.Second)
		assert.Zero(t, rdb.Exists(ctx, "t:{d}:lock").Val(), "all or none")
		other[0], other[1] = other[1], other[0]
		busy, err = AcquireMulti(ctx, rdb, "rlock", other, lease)
		require.NoError(t, err)
		assert.Equal(t, 1, busy.Busy, "the first busy name, in the order given")
		assert.Zero(t, rdb.Exists(ctx, "t:{d}:lock").Val())

		// Each handle holds its name (it knows the token): kept as it is.
		ps := parts("oa:2", "ob:2", "oc:2")
		for i := range ps {
			ps[i].Held = TokenArg(got.Tokens[i])
		}
		kept, err := AcquireMulti(ctx, rdb, "rlock", ps, lease)
		require.NoError(t, err)
		assert.Equal(t, MultiTry{OK: true, Tokens: []uint64{0, 0, 0}}, kept, "holds the handles have are kept")

		// A request that was left is refused.
		_, _, err = multiLock("e", "oe").Leave(ctx, rdb, "oe:1", true)
		require.NoError(t, err)
		left, err := AcquireMulti(ctx, rdb, "rlock", []MultiPart{{Lock: multiLock("e", "oe"), Req: "oe:1", Held: NoToken}}, lease)
		require.NoError(t, err)
		assert.False(t, left.OK)
		assert.Zero(t, rdb.Exists(ctx, "t:{e}:lock").Val())
	})
}

// A lock hash of another kind, or a fence of another type, on any name is
// refused before anything is written.
func TestLockMultiWrongType(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		lease := NewLeaseArg(time.Minute, []byte("m"))
		ps := []MultiPart{
			{Lock: multiLock("a", "o"), Req: "o:1", Held: NoToken},
			{Lock: multiLock("b", "o"), Req: "o:2", Held: NoToken},
		}
		require.NoError(t, rdb.HSet(ctx, "t:{b}:lock", "k", "rfairlock", "o", "x").Err())
		_, err := AcquireMulti(ctx, rdb, "rlock", ps, lease)
		assert.ErrorIs(t, err, errs.ErrWrongType)
		require.NoError(t, rdb.Del(ctx, "t:{b}:lock").Err())
		require.NoError(t, rdb.Set(ctx, "t:{b}:fence", "x", 0).Err())
		_, err = AcquireMulti(ctx, rdb, "rlock", ps, lease)
		assert.ErrorIs(t, err, errs.ErrWrongType)
		assert.Zero(t, rdb.Exists(ctx, "t:{a}:lock", "t:{a}:fence").Val(), "nothing written")
	})
}
