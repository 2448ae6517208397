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

// lateRelease is one lock kind's acquire and release, for
// TestLateReleaseCopies: acquire takes or re-enters the hold of token held
// (0: none) with request req; release drops one hold of token named.
type lateRelease struct {
	hash    string
	acquire func(req string, held uint64) (Acquired, error)
	release func(req string, named uint64) (int64, error)
}

// A copy of a release that reaches Redis after its owner took the lock
// again, or re-entered its hold, changes nothing: go-redis sends a command
// again when its first try failed, and the first copy may still arrive.
// The copy of a release to zero replies 0 as a retry would, and the new
// hold stays; the copy of a release of one hold of several replies the
// count, which stays. A retry that arrives before anything else of its
// owner's is still applied once.
func TestLateReleaseCopies(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		lease := NewLeaseArg(time.Minute, nil)
		kinds := map[string]func() lateRelease{
			"lock": func() lateRelease {
				l := testLock("o")
				return lateRelease{hash: l.Hash,
					acquire: func(req string, held uint64) (Acquired, error) {
						return l.Acquire(ctx, rdb, req, TokenArg(held), lease, NoRegistry)
					},
					release: func(req string, named uint64) (int64, error) {
						n, _, err := l.Release(ctx, rdb, req, false, TokenArg(named))
						return n, err
					}}
			},
			"fair": func() lateRelease {
				f := testFair("o")
				return lateRelease{hash: f.Lock.Hash,
					acquire: func(req string, held uint64) (Acquired, error) {
						a, err := f.Acquire(ctx, rdb, req, TokenArg(held), lease, true, time.Minute)
						return a.Acquired, err
					},
					release: func(req string, named uint64) (int64, error) {
						return f.Release(ctx, rdb, req, false, TokenArg(named))
					}}
			},
			"write": func() lateRelease {
				rw := testRW("o")
				return lateRelease{hash: rw.Lock.Hash,
					acquire: func(req string, held uint64) (Acquired, error) {
						a, _, err := rw.Write(ctx, rdb, req, TokenArg(held), lease, true, Register, time.Minute)
						return a, err
					},
					release: func(req string, named uint64) (int64, error) {
						n, _, err := rw.Unlock(ctx, rdb, req, false, TokenArg(named))
						return n, err
					}}
			},
		}
		for name, make := range kinds {
			t.Run(name+"/after a new hold", func(t *testing.T) {
				require.NoError(t, rdb.FlushAll(ctx).Err())
				k := make()
				first := take(t, k, "o:1", 0, 1)
				n, err := k.release("o:2", first.Token)
				require.NoError(t, err)
				require.Zero(t, n)
				n, err = k.release("o:2", first.Token)
				require.NoError(t, err)
				assert.Zero(t, n, "a retry replies as the first run did")

				second := take(t, k, "o:3", 0, 1)
				require.Greater(t, second.Token, first.Token)
				n, err = k.release("o:2", first.Token)
				require.NoError(t, err)
				assert.Zero(t, n, "the late copy replies as a retry")
				heldBy(t, ctx, rdb, k.hash, second.Token, 1)
			})
			t.Run(name+"/after a re-entry", func(t *testing.T) {
				require.NoError(t, rdb.FlushAll(ctx).Err())
				k := make()
				first := take(t, k, "o:1", 0, 1)
				take(t, k, "o:2", first.Token, 2)
				n, err := k.release("o:3", first.Token)
				require.NoError(t, err)
				require.Equal(t, int64(1), n)
				n, err = k.release("o:3", first.Token)
				require.NoError(t, err)
				assert.Equal(t, int64(1), n, "a retry is applied once")

				take(t, k, "o:4", first.Token, 2)
				n, err = k.release("o:3", first.Token)
				require.NoError(t, err)
				assert.Equal(t, int64(2), n, "the late copy changes nothing")
				heldBy(t, ctx, rdb, k.hash, first.Token, 2)

				n, err = k.release("o:5", first.Token)
				require.NoError(t, err)
				assert.Equal(t, int64(1), n, "the next release is applied")
			})
		}
	})
}

// take acquires or re-enters with req and checks the count it replies.
func take(t *testing.T, k lateRelease, req string, held uint64, count int64) Acquired {
	t.Helper()
	a, err := k.acquire(req, held)
	require.NoError(t, err)
	require.True(t, a.OK, "acquire %s", req)
	require.Equal(t, count, a.Count, "acquire %s", req)
	return a
}

// heldBy checks that the lock hash at key is the hold of token, count deep.
func heldBy(t *testing.T, ctx context.Context, rdb *redis.Client, key string, token uint64, count int64) {
	t.Helper()
	h, err := rdb.HMGet(ctx, key, "t", "c").Result()
	require.NoError(t, err)
	assert.Equal(t, []any{strconv.FormatUint(token, 10), strconv.FormatInt(count, 10)}, h, "the hold stays")
}
