package hub

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Woke dates a wake when the Hub gives it: a message's, a caller's that
// would have sent it to itself, one passed on by a waiter that left; a
// pending wake keeps its date; the Hub's own wake after a resubscription,
// which no message asked for, has none.
func TestWokeDated(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *server) {
		rdb := newClient(t, srv)
		h := newHub(t, rdb)
		f := newFence(t, h, rdb)
		a := subscribe(t, h, "ch", "")
		assert.True(t, a.Woke().IsZero(), "no wake yet")

		before := time.Now()
		publish(t, f, "ch", One())
		after := time.Now()
		require.True(t, take(a))
		assert.False(t, a.Woke().Before(before), "dated when the Hub read the message")
		assert.False(t, a.Woke().After(after))

		publish(t, f, "ch", One())
		first := a.Woke()
		publish(t, f, "ch", All()) // coalesces with the pending wake
		assert.Equal(t, first, a.Woke(), "a pending wake keeps its date")
		require.True(t, take(a))

		before = time.Now()
		h.WakeOne("ch")
		require.True(t, take(a))
		assert.False(t, a.Woke().Before(before), "WakeOne's wake is dated when it is given")

		// A wake a leaving waiter did not receive is dated when passed on.
		b := subscribe(t, h, "ch", "")
		h.Deliver("ch", All())
		require.True(t, take(a))
		before = time.Now()
		b.Close()
		require.True(t, take(a))
		assert.False(t, a.Woke().Before(before), "dated when passed on")

		h.confirm("ch", 2) // as a resubscription's confirmation
		require.True(t, take(a))
		assert.True(t, a.Woke().IsZero(), "no message asked for it")
	})
}
