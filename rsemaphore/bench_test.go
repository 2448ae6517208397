package rsemaphore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rsemaphore"
)

// BenchmarkFairVsUnfair: 64 handles in 8 processes (Clients) on one
// semaphore of 8 permits, on a local redis-server, each taking 1 permit at a
// time and holding it 1ms; unfair (the baseline, run first) and WithFair in
// the same run. Run with -benchtime 2000x (b.N = acquisitions). Metrics:
//
//	ops/s              acquisitions per second; x-unfair: as a multiple of unfair's
//	p50/p99-wait-ms    from Acquire's call to its return
//	jain               Jain's fairness index over per-handle acquisitions (1: equal)
//	roundtrips/acq     commands and pipelines sent, and the Hubs' SUBSCRIBE and
//	                   UNSUBSCRIBE (which go-redis hooks do not see)
//	max-inside         the most holders inside at once, as the harness saw them
//
// The harness counts the holders itself: more than 8 inside at once fails
// the benchmark.
func BenchmarkFairVsUnfair(b *testing.B) {
	srv := redistest.Real(b)
	var unfairRate float64
	b.Run("unfair", func(b *testing.B) {
		s := contend(b, srv)
		unfairRate = s.rate
		s.report(b, 0)
	})
	b.Run("fair", func(b *testing.B) {
		s := contend(b, srv, rsemaphore.WithFair())
		s.report(b, unfairRate)
	})
}

const (
	benchProcs   = 8
	benchWorkers = 64
	benchPermits = 8
	benchHold    = time.Millisecond
)

type semStats struct {
	rate       float64 // acquisitions per second
	waits      *hdrhistogram.Histogram
	jain       float64
	roundTrips float64
	maxInside  int64
}

func (s semStats) report(b *testing.B, unfairRate float64) {
	b.ReportMetric(s.rate, "ops/s")
	if unfairRate > 0 {
		b.ReportMetric(s.rate/unfairRate, "x-unfair")
	}
	b.ReportMetric(float64(s.waits.ValueAtQuantile(50))/1000, "p50-wait-ms")
	b.ReportMetric(float64(s.waits.ValueAtQuantile(99))/1000, "p99-wait-ms")
	b.ReportMetric(s.jain, "jain")
	b.ReportMetric(s.roundTrips, "roundtrips/acq")
	b.ReportMetric(float64(s.maxInside), "max-inside")
	b.ReportMetric(0, "ns/op") // wall time per op says nothing here; ops/s does
}

// contend runs b.N acquisitions of 1 permit by 64 handles in 8 processes,
// made with opts, and checks that no more than 8 are ever inside.
func contend(b *testing.B, srv *redistest.Server, opts ...rsemaphore.Option) semStats {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rt := &redistest.RoundTrips{}
	clients := make([]*redcoord.Client, benchProcs)
	handles := make([]*rsemaphore.Semaphore, benchWorkers)
	for p := range clients {
		rdb := srv.Client(b, func(o *redis.Options) { o.PoolSize = 2 * benchWorkers / benchProcs })
		if p == 0 {
			require.NoError(b, rdb.FlushAll(ctx).Err())
		}
		rdb.AddHook(rt)
		clients[p] = locktest.NewClient(b, rdb)
		for w := p; w < benchWorkers; w += benchProcs {
			handles[w] = rsemaphore.New(clients[p], "bench:sem", opts...)
		}
	}
	require.NoError(b, handles[0].SetPermits(ctx, benchPermits))
	require.NoError(b, handles[0].Acquire(ctx, 1)) // load the scripts
	require.NoError(b, handles[0].Release(ctx, 1))
	// SUBSCRIBE and UNSUBSCRIBE bypass go-redis hooks; each Hub counts its own.
	hubCommands := func() int64 {
		var n int64
		for _, c := range clients {
			if h, err := c.Hub(); err == nil && h != nil {
				n += h.Stats().Commands
			}
		}
		return n
	}

	n := b.N
	var (
		left       atomic.Int64
		inside     atomic.Int64 // holders, as the harness sees them
		violations atomic.Int64
		mu         sync.Mutex // guards waits, maxInside
		maxInside  int64
		waits      = hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3) // µs
		counts     = make([]int64, benchWorkers)                                 // by worker: its own slot
		wg         sync.WaitGroup
		fail       atomic.Value
	)
	left.Store(int64(n))
	rt.Reset()
	hubBase := hubCommands()
	b.ResetTimer()
	start := time.Now()
	for w, s := range handles {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				t0 := time.Now()
				if err := s.Acquire(ctx, 1); err != nil {
					fail.Store(fmt.Errorf("acquire: %w", err))
					return
				}
				wait := time.Since(t0).Microseconds()
				// The count lags the holds, never leads them: entered after
				// Acquire returns, left before Release is called. A count
				// over the permits seen is one held.
				in := inside.Add(1)
				if in > benchPermits {
					violations.Add(1)
				}
				counts[w]++
				time.Sleep(benchHold)
				inside.Add(-1)
				if err := s.Release(ctx, 1); err != nil {
					fail.Store(fmt.Errorf("release: %w", err))
					return
				}
				mu.Lock()
				_ = waits.RecordValue(wait)
				maxInside = max(maxInside, in)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err, _ := fail.Load().(error); err != nil {
		b.Fatal(err)
	}
	if v := violations.Load(); v > 0 {
		b.Fatalf("%d times more than %d holders were inside at once", v, benchPermits)
	}
	var sum, squares float64
	for _, c := range counts {
		sum += float64(c)
		squares += float64(c) * float64(c)
	}
	return semStats{
		rate:       float64(n) / elapsed.Seconds(),
		waits:      waits,
		jain:       sum * sum / (float64(len(counts)) * squares),
		roundTrips: float64(rt.Load()+hubCommands()-hubBase) / float64(n),
		maxInside:  maxInside,
	}
}
