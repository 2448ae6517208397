package scripts

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
)

// Permits added for many registered Clients wake one Client per permit,
// fresh registrations before stale ones: a registration not renewed for
// more than half its TTL waits for the permits left over.
func TestXSemWakesEveryWaiterFreshFirst(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		x := testXSem()
		sub := rdb.PSubscribe(ctx, x.Channel+"*")
		defer sub.Close()
		_, err := sub.Receive(ctx)
		require.NoError(t, err)
		_, err = x.Set(ctx, rdb, "s:1", SetTotal, 1)
		require.NoError(t, err)
		a, err := x.Acquire(ctx, rdb, "h:1", time.Minute, SemTry, time.Minute)
		require.NoError(t, err)
		require.True(t, a.OK)
		const n = 150
		for i := range n {
			a, err := x.Acquire(ctx, rdb, fmt.Sprintf("w%d:1", i), time.Minute, SemRegister, time.Minute)
			require.NoError(t, err)
			require.False(t, a.OK)
		}
		// w0's registration was last renewed 40s ago: stale, though alive
		deadline := float64(time.Now().Add(20 * time.Second).UnixMilli())
		require.NoError(t, rdb.ZAddXX(ctx, x.Waiters, redis.Z{Score: deadline, Member: "w0"}).Err())

		_, err = x.Set(ctx, rdb, "s:2", AddTotal, n-1)
		require.NoError(t, err)
		msgs := receiveAll(t, rdb, sub, x.Channel)
		require.Len(t, msgs, n-1, "a wake for each permit added")
		for _, m := range msgs {
			assert.NotEqual(t, x.Channel+":w0", m.Channel, "the stale registration is passed over")
		}
		assert.Equal(t, []string{"w0"}, rdb.ZRange(ctx, x.Waiters, 0, -1).Val())

		_, err = x.Set(ctx, rdb, "s:3", AddTotal, 1)
		require.NoError(t, err)
		msgs = receiveAll(t, rdb, sub, x.Channel)
		require.Len(t, msgs, 1)
		assert.Equal(t, x.Channel+":w0", msgs[0].Channel, "with no fresh one left, the stale one")
	})
}
