package rfairlock_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rfairlock"
	"github.com/redcoord/redcoord/rlock"
)

// Holder returns the value a handle says it is (WithValue), whether it
// took the lock or was granted it by a release; a value too long is
// refused, naming the option.
func TestHolderValue(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		c := locktest.NewClient(t, rdb)

		r := rlock.New(c, "r", rlock.WithValue("worker-7"))
		require.NoError(t, r.Lock(ctx))
		h, ok, err := r.Holder(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, "worker-7", h.Value)
		require.NoError(t, r.Unlock(ctx))

		first := rfairlock.New(c, "f", rfairlock.WithValue("first"))
		next := rfairlock.New(locktest.NewClient(t, rdb), "f", rfairlock.WithValue("next"))
		require.NoError(t, first.Lock(ctx))
		h, _, err = first.Holder(ctx)
		require.NoError(t, err)
		assert.Equal(t, "first", h.Value)
		done := make(chan error, 1)
		go func() { done <- next.Lock(ctx) }()
		locktest.Eventually(t, func() bool { n, _ := first.QueueLength(ctx); return n == 1 }, "queued")
		require.NoError(t, first.Unlock(ctx))
		require.NoError(t, <-done)
		h, _, err = next.Holder(ctx)
		require.NoError(t, err)
		assert.Equal(t, "next", h.Value, "a grant carries the grantee's value")
		require.NoError(t, next.Unlock(ctx))

		plain := rlock.New(c, "p")
		require.NoError(t, plain.Lock(ctx))
		h, _, err = plain.Holder(ctx)
		require.NoError(t, err)
		assert.Empty(t, h.Value)
		require.NoError(t, plain.Unlock(ctx))

		err = rlock.New(c, "x", rlock.WithValue(strings.Repeat("v", 4097))).Lock(ctx)
		assert.ErrorIs(t, err, redcoord.ErrInvalidArgument)
		assert.Contains(t, err.Error(), "WithValue")
	})
}
