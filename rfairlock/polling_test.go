package rfairlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rfairlock"
)

// A Client that polls (WithPolling, or pub/sub refused) never sees grant
// messages: its waiters find their grants at their next check, in order.
func TestPollingWaitersFindTheirGrants(t *testing.T) {
	const poll = 2 * time.Second
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m, opts := redistest.Bubble()
		defer m.Close()
		rdb := redis.NewClient(opts)
		defer rdb.Close()
		hc, err := redcoord.New(rdb)
		require.NoError(t, err)
		defer hc.Close(ctx)
		pc, err := redcoord.New(rdb, redcoord.WithPolling(poll))
		require.NoError(t, err)
		defer pc.Close(ctx)

		holder := rfairlock.New(hc, "n")
		require.NoError(t, holder.Lock(ctx))
		first, second := rfairlock.New(pc, "n"), rfairlock.New(pc, "n")
		firstDone := lockAsync(first)
		synctest.Wait()
		secondDone := lockAsync(second)
		synctest.Wait()
		time.Sleep(poll / 4)
		released := time.Now()
		require.NoError(t, holder.Unlock(ctx))
		r := <-firstDone
		require.NoError(t, r.err)
		gap := r.at.Sub(released)
		assert.Greater(t, gap, time.Duration(0))
		assert.LessOrEqual(t, gap, poll, "found at the next check")
		n, err := first.HoldCount(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(1), n)
		select {
		case <-secondDone:
			t.Fatal("the second waiter acquired while the first holds")
		default:
		}
		require.NoError(t, first.Unlock(ctx))
		require.NoError(t, (<-secondDone).err)
		require.NoError(t, second.Unlock(ctx))
		hub, err := pc.Hub()
		require.NoError(t, err)
		assert.Nil(t, hub, "a polling Client subscribes to nothing")
	})
}
