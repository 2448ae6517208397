package rrwlock_test

import (
	"context"
	"fmt"
	"math/rand/v2"
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
	"github.com/redcoord/redcoord/rlock"
	"github.com/redcoord/redcoord/rrwlock"
)

// BenchmarkMixes: 64 handles in 8 processes (Clients) on one name, on a
// local redis-server, each operation holding the lock 1ms: a read-mostly mix
// (95% reads) and a write-heavy one (50%). In each mix, "rlock" takes an
// rlock.Mutex for every operation (the baseline, run first) and "rrwlock"
// takes RLock for reads and Lock for writes. Run with -benchtime 2000x (b.N =
// operations). Metrics:
//
//	ops/s              operations per second; x-rlock: as a multiple of rlock's
//	p50/p99-wait-ms    from the acquire's call to its return, reads and writes
//	r-p50/w-p50-wait-ms the same, of reads and of writes alone
//	roundtrips/op      commands and pipelines sent, pub/sub excluded
//
// The harness checks mutual exclusion: a writer inside with anyone else
// fails the benchmark.
func BenchmarkMixes(b *testing.B) {
	srv := redistest.Real(b)
	for _, mix := range []struct {
		name  string
		reads int // percent
	}{{"read-mostly", 95}, {"write-heavy", 50}} {
		b.Run(mix.name, func(b *testing.B) {
			var rlockRate float64
			b.Run("rlock", func(b *testing.B) {
				s := runMix(b, srv, mix.reads, func(c *redcoord.Client) mixLocker {
					m := rlock.New(c, "bench:mix")
					return mixLocker{m.Lock, m.Unlock, m.Lock, m.Unlock, false}
				})
				rlockRate = s.rate
				s.report(b, 0)
			})
			b.Run("rrwlock", func(b *testing.B) {
				s := runMix(b, srv, mix.reads, func(c *redcoord.Client) mixLocker {
					m := rrwlock.New(c, "bench:mix")
					return mixLocker{m.RLock, m.RUnlock, m.Lock, m.Unlock, true}
				})
				s.report(b, rlockRate)
			})
		})
	}
}

// mixLocker is one handle's acquire and release of each kind.
type mixLocker struct {
	rlock, runlock, lock, unlock func(context.Context) error
	shared                       bool // reads may overlap
}

type mixStats struct {
	rate                 float64 // ops/s
	waits, rWaits, wWait *hdrhistogram.Histogram
	roundTrips           float64
}

func (s mixStats) report(b *testing.B, rlockRate float64) {
	b.ReportMetric(s.rate, "ops/s")
	if rlockRate > 0 {
		b.ReportMetric(s.rate/rlockRate, "x-rlock")
	}
	ms := func(h *hdrhistogram.Histogram, q float64) float64 { return float64(h.ValueAtQuantile(q)) / 1000 }
	b.ReportMetric(ms(s.waits, 50), "p50-wait-ms")
	b.ReportMetric(ms(s.waits, 99), "p99-wait-ms")
	b.ReportMetric(ms(s.rWaits, 50), "r-p50-wait-ms")
	b.ReportMetric(ms(s.wWait, 50), "w-p50-wait-ms")
	b.ReportMetric(s.roundTrips, "roundtrips/op")
	b.ReportMetric(0, "ns/op") // wall time per op says nothing here; ops/s does
}

// runMix runs b.N operations, reads percent of them reads, by 64 handles in
// 8 processes, and checks that no writer ever shares the lock.
func runMix(b *testing.B, srv *redistest.Server, reads int, handle func(*redcoord.Client) mixLocker) mixStats {
	const (
		procs   = 8
		workers = 64
		hold    = time.Millisecond
	)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rt := &redistest.RoundTrips{}
	handles := make([]mixLocker, workers)
	for p := 0; p < procs; p++ {
		rdb := srv.Client(b, func(o *redis.Options) { o.PoolSize = 2 * workers / procs })
		if p == 0 {
			require.NoError(b, rdb.FlushAll(ctx).Err())
		}
		rdb.AddHook(rt)
		c := locktest.NewClient(b, rdb)
		for w := p; w < workers; w += procs {
			handles[w] = handle(c)
		}
	}
	require.NoError(b, handles[0].rlock(ctx)) // load the scripts
	require.NoError(b, handles[0].runlock(ctx))
	require.NoError(b, handles[0].lock(ctx))
	require.NoError(b, handles[0].unlock(ctx))

	var (
		left       atomic.Int64
		readers    atomic.Int32 // inside, as the harness sees it
		writers    atomic.Int32
		violations atomic.Int64
		mu         sync.Mutex                                                    // guards the histograms
		waits      = hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3) // µs
		rWaits     = hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3)
		wWaits     = hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3)
		wg         sync.WaitGroup
		fail       atomic.Value
	)
	left.Store(int64(b.N))
	rt.Reset()
	b.ResetTimer()
	start := time.Now()
	for w := range handles {
		h := handles[w]
		rng := rand.New(rand.NewPCG(uint64(w), 1))
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				read := rng.IntN(100) < reads
				lock, unlock := h.lock, h.unlock
				if read {
					lock, unlock = h.rlock, h.runlock
				}
				t0 := time.Now()
				if err := lock(ctx); err != nil {
					fail.Store(fmt.Errorf("acquire: %w", err))
					return
				}
				wait := time.Since(t0).Microseconds()
				// Entering: a writer must be alone, a reader must see no
				// writer. The counts lag the holds, never lead them, so an
				// overlap seen is an overlap.
				if read && h.shared {
					readers.Add(1)
					if writers.Load() != 0 {
						violations.Add(1)
					}
				} else if writers.Add(1) != 1 || readers.Load() != 0 {
					violations.Add(1)
				}
				time.Sleep(hold)
				if read && h.shared {
					readers.Add(-1)
				} else {
					writers.Add(-1)
				}
				if err := unlock(ctx); err != nil {
					fail.Store(fmt.Errorf("release: %w", err))
					return
				}
				mu.Lock()
				_ = waits.RecordValue(wait)
				if read {
					_ = rWaits.RecordValue(wait)
				} else {
					_ = wWaits.RecordValue(wait)
				}
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
	if n := violations.Load(); n > 0 {
		b.Fatalf("%d times a writer shared the lock", n)
	}
	return mixStats{
		rate:       float64(b.N) / elapsed.Seconds(),
		waits:      waits,
		rWaits:     rWaits,
		wWait:      wWaits,
		roundTrips: float64(rt.Load()) / float64(b.N),
	}
}
