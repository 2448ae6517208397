package rfairlock_test

import (
	"context"
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
	"github.com/redcoord/redcoord/rfairlock"
	"github.com/redcoord/redcoord/rlock"
)

// BenchmarkFairVsUnfair: 64 handles in 8 processes (Clients) on one name,
// each holding the lock 1ms, on a local redis-server; rlock and rfairlock in
// the same run, after a baseline of one trivial EVALSHA round trip. Run with
// -benchtime 2000x (b.N = acquisitions). Metrics:
//
//	acq/s              acquisitions per second; x-rlock: as a multiple of rlock's
//	p50/p99-wait-ms    from Lock's call to its return
//	gap-p50-us         the hand-off gap: from the reply to the Unlock that
//	                   released the lock to the next holder's return from Lock
//	                   (0 when the next holder returned first: the grant
//	                   overtook the reply)
//	gap/rtt            gap-p50-us as a multiple of the baseline's p50-us
//	gap/idle-rtt       the same, of the baseline's idle-p50-us
//	gap-call-p50-us    the hand-off gap from the Unlock call: one more trip to
//	                   Redis and the release script
//	jain               Jain's fairness index over per-handle acquisitions (1: equal)
//	roundtrips/acq     commands and pipelines sent, pub/sub excluded
//
// The baseline's p50-us is an EVALSHA in a tight loop; its idle-p50-us is one
// sent after 1ms of idleness, as an Unlock is after its 1ms hold: the server's
// and the client's threads are asleep then, and waking them costs more than
// the round trip itself on a small VM.
func BenchmarkFairVsUnfair(b *testing.B) {
	srv := redistest.Real(b)
	var rttP50, idleP50, rlockRate float64 // from the earlier sub-benchmarks
	b.Run("rtt-evalsha", func(b *testing.B) {
		rdb := srv.Client(b)
		ctx := context.Background()
		one := redis.NewScript("return 1")
		require.NoError(b, one.Load(ctx, rdb).Err())
		rtt := hdrhistogram.New(1, int64(time.Second/time.Microsecond), 3)
		for b.Loop() {
			t0 := time.Now()
			if err := one.EvalSha(ctx, rdb, nil).Err(); err != nil {
				b.Fatal(err)
			}
			_ = rtt.RecordValue(time.Since(t0).Microseconds())
		}
		rttP50 = float64(rtt.ValueAtQuantile(50))
		b.ReportMetric(rttP50, "p50-us")
		b.StopTimer()
		idle := hdrhistogram.New(1, int64(time.Second/time.Microsecond), 3)
		for i := 0; i < 200; i++ {
			time.Sleep(time.Millisecond)
			t0 := time.Now()
			if err := one.EvalSha(ctx, rdb, nil).Err(); err != nil {
				b.Fatal(err)
			}
			_ = idle.RecordValue(time.Since(t0).Microseconds())
		}
		idleP50 = float64(idle.ValueAtQuantile(50))
		b.ReportMetric(idleP50, "idle-p50-us")
	})
	b.Run("rlock", func(b *testing.B) {
		s := contend(b, srv, func(c *redcoord.Client) locker { return rlock.New(c, "bench:fair") })
		rlockRate = s.rate
		s.report(b, rttP50, idleP50, 0)
	})
	b.Run("rfairlock", func(b *testing.B) {
		s := contend(b, srv, func(c *redcoord.Client) locker { return rfairlock.New(c, "bench:fair") })
		s.report(b, rttP50, idleP50, rlockRate)
	})
}

type locker interface {
	Lock(context.Context) error
	Unlock(context.Context) error
}

type stats struct {
	rate       float64 // acq/s
	waits      *hdrhistogram.Histogram
	gaps       *hdrhistogram.Histogram // from the Unlock reply, µs
	callGaps   *hdrhistogram.Histogram // from the Unlock call, µs
	jain       float64
	roundTrips float64
}

func (s stats) report(b *testing.B, rttP50, idleP50, rlockRate float64) {
	b.ReportMetric(s.rate, "acq/s")
	if rlockRate > 0 {
		b.ReportMetric(s.rate/rlockRate, "x-rlock")
	}
	b.ReportMetric(float64(s.waits.ValueAtQuantile(50))/1000, "p50-wait-ms")
	b.ReportMetric(float64(s.waits.ValueAtQuantile(99))/1000, "p99-wait-ms")
	gap := float64(s.gaps.ValueAtQuantile(50))
	b.ReportMetric(gap, "gap-p50-us")
	if rttP50 > 0 && idleP50 > 0 {
		b.ReportMetric(gap/rttP50, "gap/rtt")
		b.ReportMetric(gap/idleP50, "gap/idle-rtt")
	}
	b.ReportMetric(float64(s.callGaps.ValueAtQuantile(50)), "gap-call-p50-us")
	b.ReportMetric(s.jain, "jain")
	b.ReportMetric(s.roundTrips, "roundtrips/acq")
	b.ReportMetric(0, "ns/op") // wall time per op says nothing here; acq/s does
}

// contend runs b.N acquisitions by 64 handles in 8 processes.
func contend(b *testing.B, srv *redistest.Server, handle func(*redcoord.Client) locker) stats {
	const (
		procs   = 8
		workers = 64
		hold    = time.Millisecond
	)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rt := &redistest.RoundTrips{}
	handles := make([]locker, workers)
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
	require.NoError(b, handles[0].Lock(ctx)) // load the scripts
	require.NoError(b, handles[0].Unlock(ctx))

	n := b.N
	var (
		left     atomic.Int64
		seq      atomic.Int64
		mu       sync.Mutex
		waits    = hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3) // µs
		acquired = make([]time.Duration, n)                                    // by acquisition order: Lock's return
		relCall  = make([]time.Duration, n)                                    // its Unlock's call
		relReply = make([]time.Duration, n)                                    // its Unlock's reply
		counts   = make([]int64, workers)
		wg       sync.WaitGroup
		fail     atomic.Value
	)
	left.Store(int64(n))
	rt.Reset()
	b.ResetTimer()
	start := time.Now()
	for w := range handles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				t0 := time.Since(start)
				if err := handles[w].Lock(ctx); err != nil {
					fail.Store(err)
					return
				}
				t1 := time.Since(start)
				i := seq.Add(1) - 1 // under the lock: the acquisition order
				acquired[i] = t1
				counts[w]++
				time.Sleep(hold)
				relCall[i] = time.Since(start)
				if err := handles[w].Unlock(ctx); err != nil {
					fail.Store(err)
					return
				}
				relReply[i] = time.Since(start)
				mu.Lock()
				_ = waits.RecordValue((t1 - t0).Microseconds())
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
	s := stats{
		rate:       float64(n) / elapsed.Seconds(),
		waits:      waits,
		gaps:       hdrhistogram.New(0, int64(time.Minute/time.Microsecond), 3),
		callGaps:   hdrhistogram.New(0, int64(time.Minute/time.Microsecond), 3),
		roundTrips: float64(rt.Load()) / float64(n),
	}
	for i := 1; i < n; i++ {
		_ = s.gaps.RecordValue(max(0, (acquired[i] - relReply[i-1]).Microseconds()))
		_ = s.callGaps.RecordValue((acquired[i] - relCall[i-1]).Microseconds())
	}
	var sum, squares float64
	for _, c := range counts {
		sum += float64(c)
		squares += float64(c) * float64(c)
	}
	s.jain = sum * sum / (float64(len(counts)) * squares)
	return s
}
