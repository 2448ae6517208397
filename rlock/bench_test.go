package rlock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
)

func BenchmarkUncontended(b *testing.B) {
	rdb := redistest.Real(b).Client(b)
	rt := &redistest.RoundTrips{}
	rdb.AddHook(rt)
	ctx := context.Background()
	b.Run("rlock", func(b *testing.B) {
		m := rlock.New(locktest.NewClient(b, rdb), "bench:uncontended")
		require.NoError(b, m.Lock(ctx))
		require.NoError(b, m.Unlock(ctx))
		rt.Reset()
		b.ReportAllocs()
		for b.Loop() {
			if err := m.Lock(ctx); err != nil {
				b.Fatal(err)
			}
			if err := m.Unlock(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(rt.Load())/float64(b.N), "roundtrips/op")
	})
	b.Run("redislock", func(b *testing.B) {
		locker := redislock.New(rdb)
		rt.Reset()
		b.ReportAllocs()
		for b.Loop() {
			l, err := locker.Obtain(ctx, "bench:uncontended:redislock", 30*time.Second, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(rt.Load())/float64(b.N), "roundtrips/op")
	})
}

// contender is one way to take and release a contended lock.
type contender struct {
	name string
	// handle returns a worker's lock and unlock functions.
	handle func(b *testing.B, rdb *redis.Client) (lock, unlock func(context.Context) error)
}

// BenchmarkContended: 64 handles (each its own goroutine) on one name, each
// holding the lock 1ms. Run with -benchtime=2000x or more for stable tails.
func BenchmarkContended(b *testing.B) {
	const workers = 64
	srv := redistest.Real(b)
	mk := func(opts ...redcoord.Option) func(b *testing.B, rdb *redis.Client) (func(context.Context) error, func(context.Context) error) {
		var (
			once sync.Once
			c    *redcoord.Client
		)
		return func(b *testing.B, rdb *redis.Client) (func(context.Context) error, func(context.Context) error) {
			once.Do(func() { c = locktest.NewClient(b, rdb, opts...) })
			m := rlock.New(c, "bench:contended")
			return m.Lock, m.Unlock
		}
	}
	contenders := []contender{
		{"rlock", nil},
		{"rlock-polling-10ms", nil},
		{"redislock-linear-10ms", func(b *testing.B, rdb *redis.Client) (func(context.Context) error, func(context.Context) error) {
			locker := redislock.New(rdb)
			var held *redislock.Lock
			lock := func(ctx context.Context) error {
				l, err := locker.Obtain(ctx, "bench:contended:redislock", 30*time.Second,
					&redislock.Options{RetryStrategy: redislock.LinearBackoff(10 * time.Millisecond)})
				held = l
				return err
			}
			return lock, func(ctx context.Context) error { return held.Release(ctx) }
		}},
	}
	for _, ct := range contenders {
		b.Run(ct.name, func(b *testing.B) {
			rdb := srv.Client(b, func(o *redis.Options) { o.PoolSize = workers + 8 })
			require.NoError(b, rdb.FlushAll(context.Background()).Err())
			rt := &redistest.RoundTrips{}
			rdb.AddHook(rt)
			handle := ct.handle
			switch ct.name {
			case "rlock":
				handle = mk()
			case "rlock-polling-10ms":
				handle = mk(redcoord.WithPolling(10 * time.Millisecond))
			}
			runContended(b, rdb, rt, workers, handle)
		})
	}
}

func runContended(b *testing.B, rdb *redis.Client, rt *redistest.RoundTrips, workers int,
	handle func(*testing.B, *redis.Client) (func(context.Context) error, func(context.Context) error)) {
	const hold = time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	locks := make([]func(context.Context) error, workers)
	unlocks := make([]func(context.Context) error, workers)
	for i := range locks {
		locks[i], unlocks[i] = handle(b, rdb)
	}
	var (
		left  atomic.Int64
		mu    sync.Mutex
		waits = hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3) // µs
		wg    sync.WaitGroup
		fail  atomic.Value
	)
	left.Store(int64(b.N))
	rt.Reset()
	b.ResetTimer()
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				t0 := time.Now()
				if err := locks[w](ctx); err != nil {
					fail.Store(err)
					return
				}
				wait := time.Since(t0)
				time.Sleep(hold)
				if err := unlocks[w](ctx); err != nil {
					fail.Store(err)
					return
				}
				mu.Lock()
				_ = waits.RecordValue(wait.Microseconds())
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
	b.ReportMetric(float64(rt.Load())/float64(b.N), "roundtrips/acq")
	b.ReportMetric(float64(waits.ValueAtQuantile(50))/1000, "p50-wait-ms")
	b.ReportMetric(float64(waits.ValueAtQuantile(99))/1000, "p99-wait-ms")
	b.ReportMetric(0, "ns/op") // wall time per op says nothing here; acq/s does
}
