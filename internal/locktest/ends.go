package locktest

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
)

// ClosedEnds checks that a Client's Close ends its handles' watched holds
// before it returns: Lost closes and the holds' contexts end with
// ErrClosed, for the hold is no longer renewed; it ends in Redis within a
// lease, when another process takes the name.
func ClosedEnds(t *testing.T, k Kind) {
	InBubble(t, 2, func(t *testing.T, m *miniredis.Miniredis, ps []*Proc) {
		ctx := context.Background()
		x := k.New(ps[0].C, "n")
		require.NoError(t, x.Lock(ctx))
		scoped, cancel := x.Context(ctx)
		defer cancel()
		lost := x.Lost()

		require.NoError(t, ps[0].C.Close(ctx))
		assert.True(t, IsClosed(lost), "Lost closed by Close")
		require.Error(t, scoped.Err(), "the hold's context ended by Close")
		assert.ErrorIs(t, context.Cause(scoped), redcoord.ErrClosed)
		assert.Equal(t, int64(1), k.Count(m, "n", x.Owner()), "nothing is released: the hold lapses")

		time.Sleep(ps[0].C.LeaseTTL())
		y := k.New(ps[1].C, "n")
		require.NoError(t, y.Lock(ctx), "taken by another process within a lease")
		require.NoError(t, y.Unlock(ctx))
	})
}

// DoneRelease checks that a release on a done context is sent all the
// same, on a context of the library's own: a deferred Unlock(ctx) whose ctx
// ended (the client of a request went away) frees the name for another
// process at once, a re-entry's release included, and the hold is
// released, not lost.
func DoneRelease(t *testing.T, k Kind) {
	InBubble(t, 2, func(t *testing.T, m *miniredis.Miniredis, ps []*Proc) {
		ctx := context.Background()
		done, cancel := context.WithCancel(ctx)
		cancel()
		x := k.New(ps[0].C, "n")
		require.NoError(t, x.Lock(ctx))
		hctx, cancelHold := x.Context(ctx)
		defer cancelHold()
		require.NoError(t, x.Lock(hctx))
		lost := x.Lost()
		require.NoError(t, x.Unlock(done), "a re-entry's release")
		assert.Equal(t, int64(1), k.Count(m, "n", x.Owner()))
		require.NoError(t, x.Unlock(done), "the last release")
		assert.Zero(t, k.Count(m, "n", x.Owner()))
		assert.False(t, IsClosed(lost), "released, not lost")
		assert.ErrorIs(t, x.Unlock(done), redcoord.ErrNotHeld, "and only once")

		y := k.New(ps[1].C, "n")
		wctx, stop := context.WithTimeout(ctx, time.Second)
		defer stop()
		require.NoError(t, y.Lock(wctx), "another process takes it at once")
		require.NoError(t, y.Unlock(ctx))
	})
}
