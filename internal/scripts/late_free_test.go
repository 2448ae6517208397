package scripts

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
)

// TestLateCopyFreeLock: a copy of an acquire (or re-entry) whose hold was
// released to zero, arriving while the name is free, takes nothing.
func TestLateCopyFreeLock(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		lease := NewLeaseArg(time.Minute, nil)
		type kind struct {
			acquire func(req string, held uint64) Acquired
			release func(req string, named uint64) int64
		}
		l := testLock("o")
		f := testFair("o")
		rw := testRW("o")
		e := testElect("o")
		fairK := func(f Fair) kind {
			return kind{func(req string, held uint64) Acquired {
				a, err := f.Acquire(ctx, rdb, req, TokenArg(held), lease, true, time.Minute)
				require.NoError(t, err)
				return a.Acquired
			}, func(req string, named uint64) int64 {
				n, err := f.Release(ctx, rdb, req, false, TokenArg(named))
				require.NoError(t, err)
				return n
			}}
		}
		kinds := map[string]kind{
			"lock": {func(req string, held uint64) Acquired {
				a, err := l.Acquire(ctx, rdb, req, TokenArg(held), lease, NoRegistry)
				require.NoError(t, err)
				return a
			}, func(req string, named uint64) int64 {
				n, _, err := l.Release(ctx, rdb, req, false, TokenArg(named))
				require.NoError(t, err)
				return n
			}},
			"fair":  fairK(f),
			"elect": fairK(e),
			"write": {func(req string, held uint64) Acquired {
				a, _, err := rw.Write(ctx, rdb, req, TokenArg(held), lease, false, NoRegistry, time.Minute)
				require.NoError(t, err)
				return a
			}, func(req string, named uint64) int64 {
				n, _, err := rw.Unlock(ctx, rdb, req, false, TokenArg(named))
				require.NoError(t, err)
				return n
			}},
		}
		for name, k := range kinds {
			t.Run(name, func(t *testing.T) {
				require.NoError(t, rdb.FlushAll(ctx).Err())
				a := k.acquire("o:1", 0)
				require.True(t, a.OK)
				require.True(t, k.acquire("o:2", a.Token).OK)
				require.Equal(t, int64(1), k.release("o:3", a.Token))
				require.Equal(t, int64(0), k.release("o:4", a.Token))
				// another owner takes and releases it in between
				assert.False(t, k.acquire("o:1", 0).OK, "late acquire copy, free lock")
				assert.False(t, k.acquire("o:2", a.Token).OK, "late re-entry copy, free lock")
				n, _ := rdb.Exists(ctx, "t:{n}:lock").Result()
				assert.Equal(t, int64(0), n, "lock hash left")
			})
		}
		t.Run("fair-busy", func(t *testing.T) {
			require.NoError(t, rdb.FlushAll(ctx).Err())
			k := fairK(f)
			a := k.acquire("o:1", 0)
			require.Equal(t, int64(0), k.release("o:2", a.Token))
			p := testFair("p")
			p.Marks = f.Marks // the copy's Client is o's
			pa, err := p.Acquire(ctx, rdb, "p:1", NoToken, lease, false, time.Minute)
			require.NoError(t, err)
			require.True(t, pa.OK)
			assert.False(t, k.acquire("o:1", 0).OK)
			n, _ := rdb.ZCard(ctx, f.alive()).Result()
			assert.Equal(t, int64(0), n, "the late copy does not queue")
		})
		t.Run("multi", func(t *testing.T) {
			// A MultiMutex part the handle held already: the multi request
			// keeps it and is not its taking request.
			require.NoError(t, rdb.FlushAll(ctx).Err())
			a, err := l.Acquire(ctx, rdb, "o:1", NoToken, lease, NoRegistry)
			require.NoError(t, err)
			part := []MultiPart{{Lock: l, Req: "o:2", Held: TokenArg(a.Token)}}
			m, err := AcquireMulti(ctx, rdb, "rlock", part, lease)
			require.NoError(t, err)
			require.True(t, m.OK)
			n, _, err := l.Release(ctx, rdb, "o:3", true, TokenArg(a.Token))
			require.NoError(t, err)
			require.Equal(t, int64(0), n)
			m, err = AcquireMulti(ctx, rdb, "rlock", part, lease)
			require.NoError(t, err)
			assert.False(t, m.OK, "late multi copy naming the released hold, free lock")
			ex, _ := rdb.Exists(ctx, l.Hash).Result()
			assert.Equal(t, int64(0), ex, "lock hash left")
		})
		t.Run("read", func(t *testing.T) {
			require.NoError(t, rdb.FlushAll(ctx).Err())
			a, err := rw.Read(ctx, rdb, "o:1", false, time.Minute)
			require.NoError(t, err)
			require.True(t, a.OK)
			n, err := rw.RUnlock(ctx, rdb, "o:2", false, ReadName("o:1"))
			require.NoError(t, err)
			require.Equal(t, int64(0), n)
			a, err = rw.Read(ctx, rdb, "o:1", false, time.Minute)
			require.NoError(t, err)
			assert.False(t, a.OK, "late read acquire copy, free lock")
		})
	})
}
