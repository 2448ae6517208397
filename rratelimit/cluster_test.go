package rratelimit_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rratelimit"
)

// On a Redis Cluster of 3 masters, Allow, Wait and SetLimit work on names
// every master serves (no CROSSSLOT reply), and every key of a name is in
// the slot of its hash tag.
func TestCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 0)
	rdb := cl.Client(t)
	ctx := context.Background()
	c, err := redcoord.New(rdb)
	require.NoError(t, err)
	defer c.Close(ctx)

	names := make(map[string]bool) // name → seen on a master
	served := make(map[string]bool)
	for i := 0; len(served) < len(cl.Masters()) || len(names) < 6; i++ {
		require.Less(t, i, 1000, "names on every master")
		name := fmt.Sprintf("limit:%d", i)
		if m := cl.MasterFor("{" + name + "}"); !served[m] || len(names) < 6 {
			served[m], names[name] = true, false
		}
	}
	limit := rratelimit.PerSecond(200).WithBurst(2)
	var wg sync.WaitGroup
	for name := range names {
		lim := rratelimit.New(c, name, limit)
		wg.Go(func() {
			r, err := lim.AllowN(ctx, 2)
			if assert.NoError(t, err, name) {
				assert.True(t, r.Allowed, name)
			}
			for range 3 { // each waits about 5ms for its slot
				assert.NoError(t, lim.Wait(ctx), name)
			}
			slower := rratelimit.PerSecond(100).WithBurst(2)
			if assert.NoError(t, lim.SetLimit(ctx, slower), name) {
				got, err := lim.Limit(ctx)
				assert.NoError(t, err, name)
				assert.Equal(t, slower, got, name)
			}
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			assert.NoError(t, lim.Wait(wctx), name)
		})
	}
	wg.Wait()

	var mu sync.Mutex
	require.NoError(t, rdb.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		keys, err := m.Keys(ctx, "rc:*").Result()
		if err != nil {
			return err
		}
		for _, k := range keys {
			name, _, ok := strings.Cut(strings.TrimPrefix(k, "rc:{"), "}:")
			if !assert.True(t, ok, k) {
				continue
			}
			assert.Equal(t, rdb.ClusterKeySlot(ctx, "{"+name+"}").Val(), rdb.ClusterKeySlot(ctx, k).Val(), k)
			mu.Lock()
			names[name] = true
			mu.Unlock()
		}
		return nil
	}))
	for name, seen := range names {
		assert.True(t, seen, "%s has keys", name)
		for _, part := range []string{"rate", "rate-done"} {
			assert.Equal(t, int64(1), rdb.Exists(ctx, "rc:{"+name+"}:"+part).Val(), "%s's %s", name, part)
		}
	}
}
