package rlock_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
)

// After 5,000 contended lock operations, some of them waits that time out,
// no channel is left subscribed and the goroutine count is back to where it
// was; after Close, no subscription at all (goleak in TestMain checks the
// goroutines of the whole package).
func TestNoLeaksAfterContention(t *testing.T) {
	const (
		workers = 16
		ops     = 5000
	)
	rdb := redistest.Real(t).Client(t, func(o *redis.Options) { o.PoolSize = workers + 4 })
	ctx := context.Background()
	c, err := redcoord.New(rdb)
	require.NoError(t, err)

	warm := rlock.New(c, "leak")
	require.NoError(t, warm.Lock(ctx)) // start the watchdog
	second := rlock.New(c, "leak")
	done := make(chan error)
	go func() { done <- second.Lock(ctx) }() // start the Hub
	locktest.Eventually(t, func() bool { h, _ := c.Hub(); return h != nil && h.Stats().Waiters == 1 }, "hub started")
	require.NoError(t, warm.Unlock(ctx))
	require.NoError(t, <-done)
	require.NoError(t, second.Unlock(ctx))
	baseline := runtime.NumGoroutine()

	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := rlock.New(c, "leak")
			for k := 0; k < ops/workers; k++ {
				if k%25 == 0 { // a wait that gives up
					tctx, cancel := context.WithTimeout(ctx, time.Millisecond)
					if err := m.Lock(tctx); err == nil {
						_ = m.Unlock(ctx)
					}
					cancel()
					continue
				}
				if err := m.Lock(ctx); err != nil {
					errs <- err
					return
				}
				if err := m.Unlock(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	locktest.Eventually(t, func() bool { return len(rdb.PubSubChannels(ctx, "rc:{*").Val()) == 0 }, "lock channels unsubscribed")
	locktest.Eventually(t, func() bool { return runtime.NumGoroutine() <= baseline }, "goroutines back to baseline")
	h, _ := c.Hub()
	require.Zero(t, h.Stats().Waiters)
	require.Equal(t, []string{"rc:{leak}:fence"}, locktest.Keys(t, rdb))

	require.NoError(t, c.Close(ctx))
	locktest.Eventually(t, func() bool { return len(rdb.PubSubChannels(ctx, "*").Val()) == 0 }, "no subscription after Close")
}
