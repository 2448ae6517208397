package scripts

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
)

// A fair release names the hold it drops by its token: a release that
// names an earlier hold of the owner (one it lost) leaves alone a hold
// granted since to a request of the same owner, and a retried release
// still replies as its first run did.
func TestFairReleaseNamesItsHold(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		a, b := testFair("a"), testFair("b")
		lease := NewLeaseArg(time.Minute, nil)
		lost, err := a.Acquire(ctx, rdb, "a:1", NoToken, lease, true, time.Minute)
		require.NoError(t, err)
		require.True(t, lost.OK)
		_, err = b.Force(ctx, rdb, "", fenceNow(t, ctx, rdb, b.Fence), forceReq()) // a's hold ends
		require.NoError(t, err)
		held, err := b.Acquire(ctx, rdb, "b:1", NoToken, lease, true, time.Minute)
		require.NoError(t, err)
		require.True(t, held.OK)
		queued, err := a.Acquire(ctx, rdb, "a:2", NoToken, lease, true, time.Minute)
		require.NoError(t, err)
		require.False(t, queued.OK)
		n, err := b.Release(ctx, rdb, "b:2", false, TokenArg(held.Token)) // grants to a:2
		require.NoError(t, err)
		require.Zero(t, n)
		granted := believed(t, ctx, rdb, *a.Lock)
		require.Greater(t, granted, lost.Token)

		n, err = a.Release(ctx, rdb, "a:3", true, TokenArg(lost.Token))
		require.NoError(t, err)
		assert.Equal(t, int64(-1), n, "the lost hold is not held")
		assert.Equal(t, granted, believed(t, ctx, rdb, *a.Lock), "the grant to a:2 stands")

		n, err = a.Release(ctx, rdb, "a:4", false, TokenArg(granted))
		require.NoError(t, err)
		assert.Zero(t, n)
		n, err = a.Release(ctx, rdb, "a:4", false, TokenArg(granted)) // a retry
		require.NoError(t, err)
		assert.Zero(t, n)
		assert.Zero(t, rdb.Exists(ctx, a.Lock.Hash).Val())
	})
}
