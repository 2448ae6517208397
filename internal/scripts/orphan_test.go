package scripts

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
)

// An acquire by a handle that believes it holds nothing, finding a hold of
// its owner (an orphan: an acquire applied whose reply and undo were lost),
// takes it over as a fresh hold with a new token instead of re-entering it;
// and a copy of a request that arrives after the request's leave is
// refused, writing nothing.
func TestOrphansAndLateCopies(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		fresh := func(t *testing.T, a, b Acquired) {
			t.Helper()
			require.True(t, a.OK)
			require.True(t, b.OK)
			assert.Greater(t, b.Token, a.Token, "a new token")
			assert.Equal(t, int64(1), b.Count, "a count of 1")
		}
		t.Run("lock", func(t *testing.T) {
			require.NoError(t, rdb.FlushAll(ctx).Err())
			l := testLock("a")
			a, err := l.Acquire(ctx, rdb, "a:1", TokenArg(0), NewLeaseArg(time.Minute, nil), NoRegistry)
			require.NoError(t, err)
			b, err := l.Acquire(ctx, rdb, "a:2", TokenArg(0), NewLeaseArg(time.Minute, nil), NoRegistry)
			require.NoError(t, err)
			fresh(t, a, b)
			n, _, err := l.Release(ctx, rdb, "a:3", false, TokenArg(believed(t, ctx, rdb, l)))
			require.NoError(t, err)
			assert.Zero(t, n, "one release frees it")

			_, _, err = l.Leave(ctx, rdb, "a:4", false)
			require.NoError(t, err)
			late, err := l.Acquire(ctx, rdb, "a:4", TokenArg(0), NewLeaseArg(time.Minute, nil), NoRegistry)
			require.NoError(t, err)
			assert.False(t, late.OK, "a late copy is refused")
			assert.Zero(t, rdb.Exists(ctx, l.Hash).Val())
		})
		t.Run("fair", func(t *testing.T) {
			require.NoError(t, rdb.FlushAll(ctx).Err())
			f := testFair("a")
			a, err := f.Acquire(ctx, rdb, "a:1", TokenArg(0), NewLeaseArg(time.Minute, nil), true, time.Minute)
			require.NoError(t, err)
			b, err := f.Acquire(ctx, rdb, "a:2", TokenArg(0), NewLeaseArg(time.Minute, nil), true, time.Minute)
			require.NoError(t, err)
			fresh(t, a.Acquired, b.Acquired)
			n, err := f.Release(ctx, rdb, "a:3", false, TokenArg(b.Token))
			require.NoError(t, err)
			assert.Zero(t, n)

			_, err = f.Leave(ctx, rdb, "a:4")
			require.NoError(t, err)
			late, err := f.Acquire(ctx, rdb, "a:4", TokenArg(0), NewLeaseArg(time.Minute, nil), true, time.Minute)
			require.NoError(t, err)
			assert.False(t, late.OK)
			assert.Zero(t, rdb.Exists(ctx, f.Lock.Hash, f.queue()).Val(), "no hold, no queue entry")
		})
		t.Run("write", func(t *testing.T) {
			require.NoError(t, rdb.FlushAll(ctx).Err())
			rw := testRW("a")
			a, _, err := rw.Write(ctx, rdb, "a:1", TokenArg(0), NewLeaseArg(time.Minute, nil), true, Register, time.Minute)
			require.NoError(t, err)
			b, _, err := rw.Write(ctx, rdb, "a:2", TokenArg(0), NewLeaseArg(time.Minute, nil), true, Register, time.Minute)
			require.NoError(t, err)
			fresh(t, a, b)
			n, _, err := rw.Unlock(ctx, rdb, "a:3", false, TokenArg(believed(t, ctx, rdb, rw.Lock)))
			require.NoError(t, err)
			assert.Zero(t, n)

			_, _, err = rw.Leave(ctx, rdb, "a:4", true, false)
			require.NoError(t, err)
			late, _, err := rw.Write(ctx, rdb, "a:4", TokenArg(0), NewLeaseArg(time.Minute, nil), true, Register, time.Minute)
			require.NoError(t, err)
			assert.False(t, late.OK)
			assert.Zero(t, rdb.Exists(ctx, rw.Lock.Hash, rw.Writers).Val())
		})
		t.Run("read", func(t *testing.T) {
			require.NoError(t, rdb.FlushAll(ctx).Err())
			rw := testRW("a")
			_, err := rw.Read(ctx, rdb, "a:1", false, time.Minute)
			require.NoError(t, err)
			b, err := rw.Read(ctx, rdb, "a:2", false, time.Minute)
			require.NoError(t, err)
			assert.Equal(t, int64(1), b.Count, "taken over: a count of 1")
			n, err := rw.RUnlock(ctx, rdb, "a:3", false, ReadName("a:2"))
			require.NoError(t, err)
			assert.Zero(t, n)

			_, _, err = rw.Leave(ctx, rdb, "a:4", false, false)
			require.NoError(t, err)
			late, err := rw.Read(ctx, rdb, "a:4", false, time.Minute)
			require.NoError(t, err)
			assert.False(t, late.OK)
			assert.Zero(t, rdb.Exists(ctx, rw.Readers).Val())
		})
		t.Run("release all", func(t *testing.T) {
			require.NoError(t, rdb.FlushAll(ctx).Err())
			l := testLock("a")
			a, err := l.Acquire(ctx, rdb, "a:1", TokenArg(0), NewLeaseArg(time.Minute, nil), NoRegistry)
			require.NoError(t, err)
			_, err = l.Acquire(ctx, rdb, "a:2", TokenArg(a.Token), NewLeaseArg(time.Minute, nil), NoRegistry)
			require.NoError(t, err)
			n, _, err := l.Release(ctx, rdb, "a:3", true, TokenArg(believed(t, ctx, rdb, l)))
			require.NoError(t, err)
			assert.Zero(t, n, "every hold of the owner dropped at once")
			assert.Zero(t, rdb.Exists(ctx, l.Hash).Val())
		})
	})
}
