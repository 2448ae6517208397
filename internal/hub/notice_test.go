package hub

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A kept channel stays subscribed without a waiter, is not counted as one,
// and passes its notices to the notice handler; a notice on a waiter's
// channel reaches the handler too, and wakes the channel's waiters.
func TestKeepAndNotices(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *server) {
		rdb := newClient(t, srv)
		bodies := make(chan string, 4)
		h := newHub(t, rdb, WithNotice(func(body string) { bodies <- body }))
		ctx := testCtx(t)
		require.NoError(t, h.Pin(ctx, "own"))
		assert.Equal(t, 0, h.Stats().Waiters, "a kept channel has no waiter")
		assert.Equal(t, 0, h.Stats().Channels)

		s, err := h.Subscribe(ctx, "own", "")
		require.NoError(t, err)
		s.Close() // the channel's last waiter leaves: it stays subscribed
		assert.True(t, slices.Contains(rdb.PubSubChannels(ctx, "own").Val(), "own"), "still subscribed")

		require.NoError(t, rdb.Publish(ctx, "own", "!l a:1 7").Err())
		assert.Equal(t, "l a:1 7", <-bodies)

		w, err := h.Subscribe(ctx, "name", "")
		require.NoError(t, err)
		defer w.Close()
		require.NoError(t, rdb.Publish(ctx, "name", "!r b:2 9").Err())
		assert.Equal(t, "r b:2 9", <-bodies)
		awaitWake(t, w, "a notice wakes the channel's waiters")
	})
}
