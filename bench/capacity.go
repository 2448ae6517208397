package main

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/roundtrip"
	"github.com/redcoord/redcoord/rrwlock"
)

// capacityKinds are the capacity scenario's locks, in the order the first
// run takes them; each later run starts one further along, so that no kind
// always follows the same one.
var capacityKinds = []string{
	"redsync", "redislock", "rlock", "rfairlock", "rrwlock-write", "rrwlock-read", "rsemaphore",
}

// capacityContenders returns the capacity scenario's locks: the mutex
// contenders, rrwlock taken as a write and as a read, and rsemaphore taking
// and giving back one of its permits.
func capacityContenders(cfg *config) []contender {
	base := named(cfg, []string{"redsync", "redislock", "rlock", "rfairlock"})
	rw := contender{"rrwlock-write", "rrwlock's write lock (Lock, Unlock)",
		redcoordProcess(func(c *redcoord.Client, key string) locker { return writeLock{rrwlock.New(c, key)} })}
	rd := contender{"rrwlock-read", "rrwlock's read lock (RLock, RUnlock)",
		redcoordProcess(func(c *redcoord.Client, key string) locker { return readLock{rrwlock.New(c, key)} })}
	sem := named(cfg, []string{"rsemaphore"})[0]
	return append(base, rw, rd, sem)
}

// writeLock takes an rrwlock's write lock only: warm leaves its read lock be.
type writeLock struct{ rw *rrwlock.RWMutex }

func (l writeLock) Lock(ctx context.Context) error   { return l.rw.Lock(ctx) }
func (l writeLock) Unlock(ctx context.Context) error { return l.rw.Unlock(ctx) }

// readLock takes an rrwlock's read lock as a locker.
type readLock struct{ rw *rrwlock.RWMutex }

func (l readLock) Lock(ctx context.Context) error   { return l.rw.RLock(ctx) }
func (l readLock) Unlock(ctx context.Context) error { return l.rw.RUnlock(ctx) }

// capacityRow is one cell of the capacity scenario: one run of one lock
// kind in one shape (workers goroutines, each with its own Client and its
// own name, taking and releasing its lock with no hold, as fast as it can).
type capacityRow struct {
	Lock    string  `json:"lock"`
	Workers int     `json:"workers"` // each on its own Client and name
	Run     int     `json:"run"`     // from 1 to -runs
	Cycles  int64   `json:"cycles"`  // Lock+Unlock pairs that both succeeded
	Seconds float64 `json:"seconds"`
	Rate    float64 `json:"cycles_per_s"`
	// CPUUs is the server's CPU (used_cpu_user + used_cpu_sys of INFO cpu)
	// per cycle, in µs; nil where the server gives none (miniredis).
	CPUUs *float64 `json:"redis_cpu_us_per_cycle,omitempty"`
	// CmdUs is the cycle's commands' time in INFO commandstats (see
	// clientMicros), in µs per cycle; ScriptUs is the mean time of one
	// script call (EVALSHA, EVAL, FCALL). Nil where unknown.
	CmdUs      *float64 `json:"cmdstat_us_per_cycle,omitempty"`
	ScriptUs   *float64 `json:"script_us_per_call,omitempty"`
	RoundTrips float64  `json:"round_trips_per_cycle"`
	// Allocs is the bench process's heap allocations per cycle
	// (runtime.MemStats.Mallocs): the lock's client and go-redis, with the
	// round-trip hook's (one or two per round trip, alike for every lock);
	// the harness's loop allocates nothing per cycle.
	Allocs      float64 `json:"allocs_per_cycle"`
	Errors      int64   `json:"errors"`
	ErrorSample string  `json:"error_sample,omitempty"`
}

// capacityCells lists the capacity scenario's cells: -runs times, the
// sequential shape (one worker) then the parallel one (-capacity-workers),
// each kind in turn.
func capacityCells(cfg *config) []cell {
	cts := capacityContenders(cfg)
	var cells []cell
	for run := range cfg.runs {
		for _, w := range []int{1, cfg.capWorkers} {
			for i := range cts {
				ct := cts[(i+run)%len(cts)]
				cells = append(cells, cell{scenario: "capacity", ct: ct, workers: w, names: w, procs: w, run: run + 1})
			}
		}
	}
	return cells
}

// runCapacity runs one capacity cell on f, whose workers each have their
// own Client and name: every worker takes and releases its lock until
// cfg.duration passes or ctx is done. The server's statistics are reset
// first (CONFIG RESETSTAT, where allowed) and read before and after.
func runCapacity(ctx context.Context, f *fleet, b *backend, cfg *config, c cell) capacityRow {
	probe := f.clients[0]
	qctx, cancel := unlockCtx()
	defer cancel()
	qctx = roundtrip.Uncounted(qctx)
	_ = probe.ConfigResetStat(qctx).Err() // a server that refuses it is read before and after all the same
	var stats0 commandStats
	if b.noscript != nil {
		stats0, _ = readCommandStats(qctx, probe)
	}
	cpu0, cpuOK := readCPU(qctx, probe)
	f.trips.Reset()

	var (
		cycles, errs atomic.Int64
		sampleOnce   sync.Once
		sample       string
		wg           sync.WaitGroup
		m0, m1       runtime.MemStats
	)
	fail := func(err error) {
		errs.Add(1)
		sampleOnce.Do(func() { sample = err.Error() })
	}
	runtime.ReadMemStats(&m0)
	start := time.Now()
	cctx, stop := context.WithDeadline(ctx, start.Add(cfg.duration))
	defer stop()
	for _, lk := range f.locks {
		wg.Go(func() {
			// Unlock runs past the cell's end, bounded by go-redis's
			// timeouts; a context made once allocates nothing per cycle.
			uctx := context.WithoutCancel(cctx)
			var n int64
			for cctx.Err() == nil {
				if err := lk.Lock(cctx); err != nil {
					if cctx.Err() == nil {
						fail(err)
					}
					continue
				}
				if err := lk.Unlock(uctx); err != nil {
					fail(err)
					continue
				}
				n++
			}
			cycles.Add(n)
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	runtime.ReadMemStats(&m1)
	trips := f.trips.Load()
	cpu1, cpuOK1 := readCPU(qctx, probe)
	var stats1 commandStats
	if stats0 != nil {
		stats1, _ = readCommandStats(qctx, probe)
	}

	row := capacityRow{Lock: c.ct.name, Workers: c.workers, Run: c.run, Cycles: cycles.Load(),
		Seconds: elapsed.Seconds(), Errors: errs.Load(), ErrorSample: sample}
	if row.Cycles == 0 {
		return row
	}
	n := float64(row.Cycles)
	row.Rate = n / row.Seconds
	row.RoundTrips = float64(trips) / n
	row.Allocs = float64(m1.Mallocs-m0.Mallocs) / n
	if cpuOK && cpuOK1 {
		row.CPUUs = ptr((cpu1 - cpu0) / n)
	}
	if stats0 != nil && stats1 != nil {
		row.CmdUs = ptr(float64(clientMicros(stats0, stats1, f.noscript, f.trips.Commands)) / n)
		var calls, usec int64
		for _, name := range []string{"evalsha", "eval", "evalsha_ro", "eval_ro", "fcall", "fcall_ro"} {
			calls += stats1[name].calls - stats0[name].calls
			usec += stats1[name].usec - stats0[name].usec
		}
		if calls > 0 {
			row.ScriptUs = ptr(float64(usec) / float64(calls))
		}
	}
	return row
}

func ptr(v float64) *float64 { return &v }

// readCPU returns the server's CPU time so far, used_cpu_user +
// used_cpu_sys of INFO cpu, in µs, summed over a cluster's masters; false
// when the server gives none.
func readCPU(ctx context.Context, rdb redis.UniversalClient) (float64, bool) {
	var (
		mu    sync.Mutex
		total float64
		ok    = true
	)
	read := func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "cpu").Result()
		user, uerr := strconv.ParseFloat(infoField(info, "used_cpu_user"), 64)
		sys, serr := strconv.ParseFloat(infoField(info, "used_cpu_sys"), 64)
		mu.Lock()
		defer mu.Unlock()
		if err != nil || uerr != nil || serr != nil {
			ok = false
			return nil
		}
		total += (user + sys) * 1e6
		return nil
	}
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		if err := c.ForEachMaster(ctx, read); err != nil {
			return 0, false
		}
	case *redis.Client:
		_ = read(ctx, c)
	default:
		return 0, false
	}
	return total, ok
}

// capacitySummary returns the capacity table's line of one lock in one
// shape over its runs: the median of each figure, the range of the server
// CPU, and the median over the runs of each ratio to redsync's in the same
// run and shape; false when the lock did not run in that shape.
func capacitySummary(rows []capacityRow, lock string, workers int) (capacitySum, bool) {
	var s capacitySum
	var rate, cpu, cmd, script, trips, allocs, xCPU, xRate []float64
	for _, r := range rows {
		if r.Lock != lock || r.Workers != workers {
			continue
		}
		s.runs++
		s.errors += r.Errors
		if s.sample == "" {
			s.sample = r.ErrorSample
		}
		rate = append(rate, r.Rate)
		trips = append(trips, r.RoundTrips)
		allocs = append(allocs, r.Allocs)
		if r.CPUUs != nil {
			cpu = append(cpu, *r.CPUUs)
		}
		if r.CmdUs != nil {
			cmd = append(cmd, *r.CmdUs)
		}
		if r.ScriptUs != nil {
			script = append(script, *r.ScriptUs)
		}
		for _, base := range rows {
			if base.Lock == "redsync" && base.Workers == workers && base.Run == r.Run {
				if base.CPUUs != nil && r.CPUUs != nil && *base.CPUUs > 0 {
					xCPU = append(xCPU, *r.CPUUs / *base.CPUUs)
				}
				if base.Rate > 0 {
					xRate = append(xRate, r.Rate/base.Rate)
				}
			}
		}
	}
	if s.runs == 0 {
		return s, false
	}
	s.rate, s.trips, s.allocs = median(rate), median(trips), median(allocs)
	s.cpu, s.cpuLo, s.cpuHi = summary(cpu)
	s.cmd, _, _ = summary(cmd)
	s.script, _, _ = summary(script)
	s.xCPU, _, _ = summary(xCPU)
	s.xRate, _, _ = summary(xRate)
	return s, true
}

// capacitySum is one line of the capacity table: a lock in one shape, over
// its runs. A nil figure is unknown.
type capacitySum struct {
	runs                int
	rate, trips, allocs float64
	cpu, cpuLo, cpuHi   *float64
	cmd, script         *float64
	xCPU, xRate         *float64
	errors              int64
	sample              string
}
