package locktest

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
)

// noticeChannel returns the channel on which a forced unlock tells the
// Client of owner, outside Cluster, under the default prefix.
func noticeChannel(owner string) string {
	client, _, _ := strings.Cut(owner, ":")
	return "rc:ch:" + client
}

// ForcedNotice checks that a hold another Client forces out is lost as
// soon as the force's message arrives, not at its next renewal: in a
// bubble no time passes between the force and its Lost closing, and its
// contexts end with a cause that matches ErrLeaseLost and says it was
// forced. A copy of that message arriving after the handle took a fresh
// hold (a stale notice) leaves the fresh hold alone.
func ForcedNotice(t *testing.T, k Kind) {
	InBubble(t, 2, func(t *testing.T, m *miniredis.Miniredis, ps []*Proc) {
		ctx := context.Background()
		x := k.New(ps[0].C, "n")
		require.NoError(t, x.Lock(ctx))
		synctest.Wait() // the Client's listener has subscribed
		spy := ps[1].RDB.Subscribe(ctx, noticeChannel(x.Owner()))
		defer spy.Close()
		_, err := spy.Receive(ctx) // its confirmation
		require.NoError(t, err)

		lost := x.Lost()
		hctx, cancel := x.Context(ctx)
		defer cancel()
		forced := time.Now()
		require.NoError(t, Second(k.Force(ctx, ps[1].C, "n")))
		synctest.Wait()
		require.True(t, IsClosed(lost), "the force's message ended the hold")
		assert.Equal(t, forced, time.Now(), "at once: no renewal ran")
		require.Error(t, hctx.Err())
		assert.ErrorIs(t, context.Cause(hctx), redcoord.ErrLeaseLost)
		assert.Contains(t, context.Cause(hctx).Error(), "forced")
		assert.ErrorIs(t, x.Unlock(ctx), redcoord.ErrLeaseLost)

		msg, err := spy.ReceiveMessage(ctx)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(msg.Payload, "!"), "a notice: %q", msg.Payload)

		require.NoError(t, x.Lock(ctx), "a fresh hold")
		fresh := x.Lost()
		require.NoError(t, ps[1].RDB.Publish(ctx, msg.Channel, msg.Payload).Err())
		synctest.Wait()
		assert.False(t, IsClosed(fresh), "a stale notice spares a later hold")
		time.Sleep(ps[0].C.LeaseTTL())
		synctest.Wait()
		assert.False(t, IsClosed(fresh), "still renewed")
		assert.Equal(t, int64(1), k.Count(m, "n", x.Owner()))
		require.NoError(t, x.Unlock(ctx))
	})
}
