package scripts

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
)

// A release to zero, or an undo that frees the lock, whose next
// registration is its own Client's publishes nothing and returns the wake
// in its reply ({n, "1"} for a registered Client); a retry of such a
// release, which cannot tell whom its first run woke, returns "1" too; a
// wake for another Client is published as before, and the reply carries
// none.
func TestWakeForOwnClientIsReturned(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		sub := rdb.PSubscribe(ctx, "t:{n}:*")
		defer sub.Close()
		_, err := sub.Receive(ctx)
		require.NoError(t, err)
		lease := NewLeaseArg(time.Minute, nil)
		a, a2, b := testLock("ca:1"), testLock("ca:2"), testLock("cb:1")
		waiters := func() []string { return rdb.ZRange(ctx, a.Waiters, 0, -1).Val() }

		got, err := a.Acquire(ctx, rdb, "ca:1:1", TokenArg(0), lease, Register)
		require.NoError(t, err)
		require.True(t, got.OK)
		_, err = a2.Acquire(ctx, rdb, "ca:2:1", TokenArg(0), lease, Register)
		require.NoError(t, err)
		require.Equal(t, []string{"ca"}, waiters())
		n, wake, err := a.Release(ctx, rdb, "ca:1:2", false, TokenArg(got.Token))
		require.NoError(t, err)
		assert.Zero(t, n)
		assert.Equal(t, "1", wake, "the wake for its own Client is in the reply")
		assert.Empty(t, receiveAll(t, rdb, sub, "t:{n}:end"), "and not published")
		assert.Empty(t, waiters(), "the woken Client left the registry")
		n, wake, err = a.Release(ctx, rdb, "ca:1:2", false, TokenArg(got.Token))
		require.NoError(t, err)
		assert.Zero(t, n, "a retry")
		assert.Equal(t, "1", wake, "a retry hands its Client a wake")

		// An acquire whose reply was lost, undone while another waiter of
		// its Client keeps the Client registered, frees the lock for it.
		got, err = a.Acquire(ctx, rdb, "ca:1:3", TokenArg(0), lease, Register)
		require.NoError(t, err)
		require.True(t, got.OK)
		_, err = a2.Acquire(ctx, rdb, "ca:2:2", TokenArg(0), lease, Register)
		require.NoError(t, err)
		undone, wake, err := a.Leave(ctx, rdb, "ca:1:3", true)
		require.NoError(t, err)
		assert.True(t, undone)
		assert.Equal(t, "1", wake)
		assert.Empty(t, receiveAll(t, rdb, sub, "t:{n}:end"))

		// Another Client's registration is published to.
		got, err = a.Acquire(ctx, rdb, "ca:1:4", TokenArg(0), lease, Register)
		require.NoError(t, err)
		require.True(t, got.OK)
		_, err = b.Acquire(ctx, rdb, "cb:1:1", TokenArg(0), lease, Register)
		require.NoError(t, err)
		n, wake, err = a.Release(ctx, rdb, "ca:1:5", false, TokenArg(got.Token))
		require.NoError(t, err)
		assert.Zero(t, n)
		assert.Empty(t, wake)
		msgs := receiveAll(t, rdb, sub, "t:{n}:end")
		require.Len(t, msgs, 1)
		assert.Equal(t, "t:{n}:ch:cb 1", msgs[0].Channel+" "+msgs[0].Payload)
	})
}

// A write release whose next registered writer is a request of its own
// Client returns the writer's wake ("@<req> ") instead of publishing it.
func TestRWWakeForOwnClientIsReturned(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		sub := rdb.PSubscribe(ctx, "t:{n}:*")
		defer sub.Close()
		_, err := sub.Receive(ctx)
		require.NoError(t, err)
		lease := NewLeaseArg(time.Minute, nil)
		h, w := testRW("c:1"), testRW("c:2")
		a, _, err := h.Write(ctx, rdb, "c:1:1", TokenArg(0), lease, false, NoRegistry, time.Minute)
		require.NoError(t, err)
		require.True(t, a.OK)
		held := a.Token
		a, _, err = w.Write(ctx, rdb, "c:2:1", TokenArg(0), lease, true, Register, time.Minute)
		require.NoError(t, err)
		require.False(t, a.OK)
		n, wake, err := h.Unlock(ctx, rdb, "c:1:2", false, TokenArg(held))
		require.NoError(t, err)
		assert.Zero(t, n)
		assert.Equal(t, "1", wake, "its Client is registered once, by its id")
		assert.Empty(t, receiveAll(t, rdb, sub, "t:{n}:end"))
	})
}
