package scripts

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
)

// A release wakes a registered waiter on its client's channel with the
// Session's publish command: SPUBLISH reaches SSUBSCRIBE; where SPUBLISH is
// refused (a server before 7.0, here renamed away) the script publishes
// with PUBLISH, which its SUBSCRIBE-ing Hubs hear.
func TestNotifyFallsBackToPublish(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		sub  func(*redis.Client, context.Context, ...string) *redis.PubSub
	}{
		{"SPUBLISH reaches SSUBSCRIBE", nil, (*redis.Client).SSubscribe},
		{"refused SPUBLISH becomes PUBLISH", []string{"--rename-command", "SPUBLISH", ""}, (*redis.Client).Subscribe},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			rdb := redistest.Real(t, tc.args...).Client(t)
			ps := tc.sub(rdb, ctx, "t:{n}:ch:cb")
			defer func() { _ = ps.Close() }()
			_, err := ps.Receive(ctx) // the confirmation
			require.NoError(t, err)

			l, w := testLock("ca:1"), testLock("cb:1")
			l.Publish = "SPUBLISH"
			a, err := l.Acquire(ctx, rdb, "ca:1:1", TokenArg(0), NewLeaseArg(time.Minute, nil), NoRegistry)
			require.NoError(t, err)
			require.True(t, a.OK)
			busy, err := w.Acquire(ctx, rdb, "cb:1:1", TokenArg(0), NewLeaseArg(time.Minute, nil), Register)
			require.NoError(t, err)
			require.False(t, busy.OK)
			n, _, err := l.Release(ctx, rdb, "ca:1:2", false, TokenArg(believed(t, ctx, rdb, l)))
			require.NoError(t, err)
			assert.Equal(t, int64(0), n)
			msg, err := ps.ReceiveMessage(ctx)
			require.NoError(t, err)
			assert.Equal(t, "1", msg.Payload, "a wake-one for the registered Client")
		})
	}
}
