package relection_test

import (
	"context"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/relection"
)

// Close ends the lead before it returns: Lost closes, and the term's
// contexts end with ErrClosed, not as a loss, although Close ends the
// lead's hold before it signals that the Client is closed.
func TestClosedEndsLead(t *testing.T) {
	locktest.InBubble(t, 1, func(t *testing.T, _ *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		e := relection.New(ps[0].C, "jobs")
		require.NoError(t, e.Campaign(ctx, "a"))
		scoped, cancel := e.Context(ctx)
		defer cancel()
		require.NoError(t, ps[0].C.Close(ctx))
		assert.True(t, locktest.IsClosed(e.Lost()), "Lost closed by Close")
		<-scoped.Done()
		assert.ErrorIs(t, context.Cause(scoped), redcoord.ErrClosed)
		assert.NotErrorIs(t, context.Cause(scoped), redcoord.ErrLeaseLost)
	})
}

// Resign on a done context is sent all the same: nobody leads at once.
func TestDoneResign(t *testing.T) {
	locktest.InBubble(t, 1, func(t *testing.T, _ *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		done, cancel := context.WithCancel(ctx)
		cancel()
		e := relection.New(ps[0].C, "jobs")
		require.NoError(t, e.Campaign(ctx, "a"))
		require.NoError(t, e.Resign(done))
		_, ok, err := e.Leader(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "nobody leads")
		assert.False(t, locktest.IsClosed(e.Lost()), "resigned, not lost")
	})
}
