package rlock_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
)

// 64 goroutines over 8 names, each goroutine with its own handle per name,
// 2,000 acquisitions per name: never two holders at once, and a counter
// updated by read, yield, write loses no update. (The counter's loads and
// stores are atomic only so that the race detector, which cannot see the
// ordering Redis provides, stays quiet; the increment itself is not atomic.)
func TestMutualExclusion(t *testing.T) {
	const (
		workers  = 64
		names    = 8
		perName  = 2000
		perGoro  = perName * names / workers // 250 acquisitions each
		deadline = 5 * time.Minute
	)
	rdb := redistest.Real(t).Client(t, func(o *redis.Options) { o.PoolSize = workers + 8 })
	c := locktest.NewClient(t, rdb)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()

	var (
		holders    [names]atomic.Int32
		counters   [names]atomic.Int64 // read and written apart, under the lock of the same name
		violations atomic.Int32
		wg         sync.WaitGroup
	)
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			handles := make([]*rlock.Mutex, names)
			for i := range handles {
				handles[i] = rlock.New(c, fmt.Sprintf("excl:%d", i))
			}
			for k := 0; k < perGoro; k++ {
				i := (w + k) % names
				if err := handles[i].Lock(ctx); err != nil {
					errs <- err
					return
				}
				if holders[i].Add(1) != 1 {
					violations.Add(1)
				}
				v := counters[i].Load() // not an atomic increment: the lock must make it one
				runtime.Gosched()
				counters[i].Store(v + 1)
				holders[i].Add(-1)
				if err := handles[i].Unlock(ctx); err != nil {
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
	assert.Zero(t, violations.Load(), "overlapping holders")
	for i := range counters {
		assert.Equal(t, int64(perName), counters[i].Load(), "lost updates on name %d", i)
	}
}
