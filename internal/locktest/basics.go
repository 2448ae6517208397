package locktest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/redistest"
)

// Basics checks, against both servers, what every lock with the rlock
// method set must do alike: a hold and its Holder, Unlock by a non-holder
// and after a loss, strictly increasing tokens, and two round trips for an
// uncontended Lock+Unlock. newM is the package's New.
func Basics[M Mutex](t *testing.T, newM func(*redcoord.Client, string) M) {
	t.Run("LockUnlock", func(t *testing.T) {
		redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
			rdb := srv.Client(t)
			c := NewClient(t, rdb)
			ctx := context.Background()
			m := newM(c, "orders:42")

			require.NoError(t, m.Lock(ctx))
			locked, err := m.IsLocked(ctx)
			require.NoError(t, err)
			assert.True(t, locked)
			n, err := m.HoldCount(ctx)
			require.NoError(t, err)
			assert.Equal(t, int64(1), n)
			token := m.Token()
			assert.Greater(t, token, uint64(0), "a hold has a fencing token")
			fence, err := rdb.HGet(ctx, "rc:{orders:42}:fence", "n").Uint64()
			require.NoError(t, err)
			assert.Equal(t, fence, token, "the token is the fence's last")

			h, ok, err := m.Holder(ctx)
			require.NoError(t, err)
			require.True(t, ok)
			host, _ := os.Hostname()
			assert.Equal(t, m.Owner(), h.Owner)
			assert.Equal(t, c.ID(), h.Client)
			assert.True(t, strings.HasPrefix(h.Owner, c.ID()+":"))
			assert.Equal(t, host, h.Host)
			assert.Equal(t, os.Getpid(), h.PID)
			assert.Equal(t, c.LeaseTTL(), h.Lease)
			assert.False(t, h.Fixed)
			assert.Greater(t, h.Remaining, time.Duration(0))
			assert.LessOrEqual(t, h.Remaining, c.LeaseTTL())
			assert.WithinDuration(t, time.Now(), h.AcquiredAt, time.Minute)
			assert.Equal(t, token, h.Token)

			require.NoError(t, m.Unlock(ctx))
			locked, err = m.IsLocked(ctx)
			require.NoError(t, err)
			assert.False(t, locked)
			_, ok, err = m.Holder(ctx)
			require.NoError(t, err)
			assert.False(t, ok)
			assert.Equal(t, uint64(0), m.Token())
			assert.Equal(t, []string{"rc:{orders:42}:fence"}, Keys(t, rdb), "only the fence counter stays")
		})
	})
	t.Run("UnlockByNonHolder", func(t *testing.T) {
		redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
			rdb := srv.Client(t)
			c := NewClient(t, rdb)
			ctx := context.Background()
			a, b := newM(c, "n"), newM(c, "n")
			assert.ErrorIs(t, b.Unlock(ctx), redcoord.ErrNotHeld, "free lock")
			require.NoError(t, a.Lock(ctx))
			before := rdb.HGetAll(ctx, "rc:{n}:lock").Val()
			err := b.Unlock(ctx)
			assert.ErrorIs(t, err, redcoord.ErrNotHeld)
			assert.NotErrorIs(t, err, redcoord.ErrLeaseLost)
			assert.Contains(t, err.Error(), `"n": not held by this handle`)
			assert.Equal(t, before, rdb.HGetAll(ctx, "rc:{n}:lock").Val(), "Redis unchanged")
			require.NoError(t, a.Unlock(ctx))
		})
	})
	t.Run("UnlockAfterLoss", func(t *testing.T) {
		redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
			rdb := srv.Client(t)
			c := NewClient(t, rdb)
			ctx := context.Background()
			m := newM(c, "n")
			require.NoError(t, m.LockWithLease(ctx, time.Minute))
			lost := m.Lost()
			require.NoError(t, rdb.Del(ctx, "rc:{n}:lock").Err()) // as if the lease ran out
			err := m.Unlock(ctx)
			assert.ErrorIs(t, err, redcoord.ErrLeaseLost)
			assert.ErrorIs(t, err, redcoord.ErrNotHeld)
			select {
			case <-lost:
			default:
				t.Fatal("Lost not closed by a failed Unlock")
			}
			assert.ErrorIs(t, m.Unlock(ctx), redcoord.ErrNotHeld)
		})
	})
	t.Run("TokensIncrease", func(t *testing.T) {
		redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
			rdb := srv.Client(t)
			c := NewClient(t, rdb)
			ctx := context.Background()
			var last uint64
			for i := 0; i < 20; i++ {
				m := newM(c, "fenced")
				require.NoError(t, m.Lock(ctx))
				assert.Greater(t, m.Token(), last)
				last = m.Token()
				require.NoError(t, m.Unlock(ctx))
			}
		})
	})
	t.Run("UncontendedCostsTwoRoundTrips", func(t *testing.T) {
		redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
			rdb := srv.Client(t)
			rt := &redistest.RoundTrips{}
			rdb.AddHook(rt)
			ctx := context.Background()
			m := newM(NewClient(t, rdb), "rt")
			require.NoError(t, m.Lock(ctx)) // loads the scripts
			require.NoError(t, m.Unlock(ctx))
			rt.Reset()
			for i := 0; i < 10; i++ {
				require.NoError(t, m.Lock(ctx))
				require.NoError(t, m.Unlock(ctx))
			}
			require.Equal(t, int64(20), rt.Load())
		})
	})
}
