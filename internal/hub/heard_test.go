package hub

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Heard says whether a pinned channel was subscribed, on the connection,
// before the last message targeted at the subscription: not before any
// such message, not for a channel pinned after it, nor for one that is
// not pinned; and not once the connection changed and the pinned channel
// is not yet confirmed again on the new one.
func TestHeardOrdersThePinnedChannelBeforeTheMessage(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *server) {
		rdb := newClient(t, srv)
		h := newHub(t, rdb)
		f := newFence(t, h, rdb)
		a := subscribe(t, h, "grants", "r1")
		assert.False(t, a.Heard("notices"), "no message yet")

		publish(t, f, "grants", To("r1", "before"))
		require.True(t, take(a))
		require.NoError(t, h.Pin(testCtx(t), "notices"))
		assert.False(t, a.Heard("notices"), "pinned after the message")

		publish(t, f, "grants", To("r1", "after"))
		require.True(t, take(a))
		assert.True(t, a.Heard("notices"))
		assert.False(t, a.Heard("test:fence"), "not pinned")

		h.confirm("probe", 1) // a new connection's first confirmation
		assert.False(t, a.Heard("notices"), "the message came on the old connection")
		publish(t, f, "grants", To("r1", "again"))
		require.True(t, take(a))
		assert.False(t, a.Heard("notices"), "not confirmed on the new connection yet")
		h.confirm("notices", 2)
		publish(t, f, "grants", To("r1", "later"))
		require.True(t, take(a))
		assert.True(t, a.Heard("notices"))
	})
}
