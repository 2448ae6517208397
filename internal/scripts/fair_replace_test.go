package scripts

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
)

// A script that frees the lock and hands it on (a release of every hold,
// a force, a leave that gives back a grant) leaves the grantee exactly the
// hash a fresh take writes, with the grantee's lease, though it no longer
// deletes the freed hold's hash first: no field of the old hold (its
// count, its fixed-lease mark) survives. A dead head is dropped on the way,
// and with nobody left to follow, the hash is deleted.
func TestFairHandOnReplacesTheHash(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		f := testFair("a")
		queue := func(owner, req, meta string) {
			t.Helper()
			got, err := testFair(owner).Acquire(ctx, rdb, req, TokenArg(0), NewLeaseArg(5*time.Second, []byte(meta)), true, time.Minute)
			require.NoError(t, err)
			require.False(t, got.OK, "%s queued", req)
		}
		granted := func(owner, req, meta string, token uint64) {
			t.Helper()
			h := rdb.HGetAll(ctx, f.Lock.Hash).Val()
			assert.Equal(t, map[string]string{"k": "rfairlock", "o": owner, "c": "1", "x": "0",
				"t": h["t"], "r": req, "q": req, "m": meta, "a": h["a"]}, h, "the grantee's hash, and nothing else")
			assert.Greater(t, parseUint(t, h["t"]), token, "a new token")
			ttl := rdb.PTTL(ctx, f.Lock.Hash).Val()
			assert.Greater(t, ttl, 3*time.Second, "the grantee's lease")
			assert.LessOrEqual(t, ttl, 5*time.Second)
		}

		first, err := f.Acquire(ctx, rdb, "a:1", TokenArg(0), NewLeaseArg(time.Minute, []byte("ma")), true, time.Minute)
		require.NoError(t, err)
		again, err := f.Acquire(ctx, rdb, "a:2", TokenArg(first.Token), NewLeaseArg(time.Minute, []byte("ma")), true, time.Minute)
		require.NoError(t, err)
		require.Equal(t, int64(2), again.Count)
		require.NoError(t, rdb.HSet(ctx, f.Lock.Hash, "x", 1).Err()) // as an Extend marks it
		queue("c", "c:1", "mc")
		require.NoError(t, rdb.ZAdd(ctx, f.alive(), redis.Z{Score: 1, Member: "c:1"}).Err()) // c's heartbeat lapsed
		queue("b", "b:1", "mb")
		queue("d", "d:1", "md")

		n, err := f.Release(ctx, rdb, "a:3", true, TokenArg(first.Token))
		require.NoError(t, err)
		require.Zero(t, n)
		granted("b", "b:1", "mb", first.Token)
		assert.Equal(t, []string{"d:1"}, rdb.LRange(ctx, f.queue(), 0, -1).Val(), "the dead head dropped, the grantee gone")
		assert.Equal(t, []string{"d:1"}, rdb.ZRange(ctx, f.alive(), 0, -1).Val())
		assert.Equal(t, []string{"d:1"}, waitingIDs(t, ctx, rdb, f.waiting()))

		b := parseUint(t, rdb.HGet(ctx, f.Lock.Hash, "t").Val())
		held, err := f.Force(ctx, rdb, "", fenceNow(t, ctx, rdb, f.Fence), forceReq())
		require.NoError(t, err)
		require.Equal(t, ForceDone, held)
		granted("d", "d:1", "md", b)

		d := parseUint(t, rdb.HGet(ctx, f.Lock.Hash, "t").Val())
		queue("e", "e:1", "me")
		left, err := testFair("d").Leave(ctx, rdb, "d:1") // d's grant, given back unseen
		require.NoError(t, err)
		require.True(t, left)
		granted("e", "e:1", "me", d)

		n, err = testFair("e").Release(ctx, rdb, "e:2", true, TokenArg(parseUint(t, rdb.HGet(ctx, f.Lock.Hash, "t").Val())))
		require.NoError(t, err)
		require.Zero(t, n)
		assert.Zero(t, rdb.Exists(ctx, f.Lock.Hash, f.queue(), f.alive(), f.waiting()).Val(), "nobody follows: the hash is deleted")
	})
}

func parseUint(t *testing.T, s string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(s, 10, 64)
	require.NoError(t, err)
	return n
}
