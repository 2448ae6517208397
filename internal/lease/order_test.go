package lease_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/redistest"
)

// renewInOrder renews KEYS[1] as renew does, and appends it to the list
// KEYS[2]: the list shows the order of a tick's pipeline.
var renewInOrder = redis.NewScript(`redis.call('RPUSH', KEYS[2], KEYS[1])
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1]) return 1 end
return 0`)

// A tick renews the leases, and the watchdog reports their ends, in the
// order they were watched (a lease watched again goes last), whatever the
// order of the map that holds them.
func TestOrderFollowsWatch(t *testing.T) {
	bubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, _ *redistest.RoundTrips, w *lease.Watchdog) {
		ctx := context.Background()
		var e ended
		watch := func(keys []string) []*lease.Lease {
			var ls []*lease.Lease
			for _, k := range keys {
				require.NoError(t, rdb.Set(ctx, k, "x", ttl).Err())
				r := lease.Renewal{Script: renewInOrder, Keys: []string{k, "order"}, Args: []any{ttl.Milliseconds()}}
				l, err := w.Watch(r, time.Now(), &e)
				require.NoError(t, err)
				ls = append(ls, l)
			}
			return ls
		}
		keys := []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"}
		ls := watch(keys)
		ls[2].Remove()
		require.NoError(t, ls[2].Again())
		want := []*lease.Lease{ls[0], ls[1], ls[3], ls[4], ls[5], ls[6], ls[7], ls[2]}
		wantKeys := []string{"k0", "k1", "k3", "k4", "k5", "k6", "k7", "k2"}

		time.Sleep(w.Interval() + time.Millisecond)
		synctest.Wait()
		assert.Equal(t, wantKeys, rdb.LRange(ctx, "order", 0, -1).Val(), "the tick's pipeline")

		for _, k := range keys {
			m.Del(k)
		}
		time.Sleep(w.Interval())
		synctest.Wait()
		e.mu.Lock()
		assert.Equal(t, want, e.lost, "the reports of a tick that found the holds gone")
		e.mu.Unlock()

		for i := range keys {
			keys[i] = fmt.Sprintf("s%d", i)
		}
		stopped := watch(keys)
		w.Stop()
		e.mu.Lock()
		assert.Equal(t, stopped, e.close, "Stop's reports")
		e.mu.Unlock()
	})
}
