package rrwlock_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rrwlock"
)

// State tells each holder's value (WithValue): the writer's, and each
// reader's; a handle without one shows none, and a value goes with its
// hold.
func TestStateValues(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		c := locktest.NewClient(t, rdb)

		w := rrwlock.New(c, "n", rrwlock.WithValue("writer-1"))
		require.NoError(t, w.Lock(ctx))
		st, err := w.State(ctx)
		require.NoError(t, err)
		assert.Equal(t, "writer-1", st.Writer.Value)
		require.NoError(t, w.Unlock(ctx))

		a := rrwlock.New(c, "n", rrwlock.WithValue("reader-a"))
		b := rrwlock.New(c, "n")
		require.NoError(t, a.RLock(ctx))
		require.NoError(t, a.RLock(ctx)) // a re-entry keeps the value
		require.NoError(t, b.RLock(ctx))
		st, err = a.State(ctx)
		require.NoError(t, err)
		values := map[string]string{}
		for _, r := range st.Readers {
			values[r.Owner] = r.Value
		}
		assert.Equal(t, map[string]string{a.Owner(): "reader-a", b.Owner(): ""}, values)

		require.NoError(t, a.RUnlock(ctx))
		require.NoError(t, a.RUnlock(ctx))
		assert.False(t, rdb.HExists(ctx, "rc:{n}:readers", "v:"+a.Owner()).Val(), "the value goes with the hold")
		require.NoError(t, b.RUnlock(ctx))
		assert.NotContains(t, locktest.Keys(t, rdb), "rc:{n}:readers", "no reader left: no readers' hash")
	})
}
