package main

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/internal/roundtrip"
)

// BenchmarkContended: 64 workers, each its own handle and goroutine, on one
// name of a redis-server of its own, each holding the lock 1ms; rlock, then
// rlock polling every 10ms, then bsm/redislock retrying every 10ms. The
// workers of a contender share one go-redis client (and one redcoord
// Client). Run with -benchtime=2000x or more for stable tails:
//
//	go test ./bench -run '^$' -bench Contended -benchtime 2000x
func BenchmarkContended(b *testing.B) {
	const workers = 64
	srv := redistest.Real(b)
	cfg := benchConfig(b)
	for _, ct := range named(cfg, []string{"rlock", "rlock-poll", "redislock"}) {
		b.Run(ct.name, func(b *testing.B) {
			ctx := context.Background()
			rdb := srv.Client(b, func(o *redis.Options) { o.PoolSize = workers + 8 })
			require.NoError(b, rdb.FlushAll(ctx).Err())
			var trips roundtrip.Counter
			rdb.AddHook(&trips)
			pr, err := ct.open(rdb, cfg, "bench")
			require.NoError(b, err)
			b.Cleanup(func() { require.NoError(b, pr.close(ctx)) })
			locks := make([]locker, workers)
			for w := range locks {
				locks[w] = pr.handle("contended")
			}
			runContended(b, &trips, pr, locks)
		})
	}
}

// runContended runs b.N acquisitions over the workers' locks and reports
// their rate, round trips and waits.
func runContended(b *testing.B, trips *roundtrip.Counter, pr process, locks []locker) {
	const hold = time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pubsub := func() int64 {
		if pr.pubsub == nil {
			return 0
		}
		return pr.pubsub()
	}
	var (
		left  atomic.Int64
		mu    sync.Mutex // protects waits
		waits = newHist()
		wg    sync.WaitGroup
		fail  atomic.Value
	)
	left.Store(int64(b.N))
	trips.Reset()
	subs := pubsub()
	b.ResetTimer()
	start := time.Now()
	for _, lk := range locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				t0 := time.Now()
				if err := lk.Lock(ctx); err != nil {
					fail.Store(err)
					return
				}
				wait := time.Since(t0)
				time.Sleep(hold)
				if err := lk.Unlock(ctx); err != nil {
					fail.Store(err)
					return
				}
				mu.Lock()
				record(waits, wait)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err, _ := fail.Load().(error); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "acq/s")
	b.ReportMetric(float64(trips.Load()+pubsub()-subs)/float64(b.N), "roundtrips/acq")
	b.ReportMetric(ms(waits, 50), "p50-wait-ms")
	b.ReportMetric(ms(waits, 99), "p99-wait-ms")
	b.ReportMetric(0, "ns/op") // wall time per op says nothing here; acq/s does
}
