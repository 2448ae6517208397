package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/roundtrip"
	"github.com/redcoord/redcoord/rratelimit"
)

// rateNames are the ratelimit scenario's contenders: rratelimit's Wait
// (one reservation, then a sleep to its slot), and go-redis/redis_rate
// used the way its README shows (Allow, sleep RetryAfter, try again).
var rateNames = []string{"rratelimit-wait", "redis_rate"}

// rateAbout says how each contender waits, for the legend.
var rateAbout = map[string]string{
	"rratelimit-wait": "rratelimit Wait: one round trip reserves the next slot, then a sleep until it",
	"redis_rate":      "go-redis/redis_rate v10 Allow in a loop: sleep RetryAfter, try again (its README's pattern)",
}

// rateRow is one cell of the ratelimit scenario.
type rateRow struct {
	Lock        string   `json:"lock"`
	Workers     int      `json:"workers"`
	Procs       int      `json:"procs"`
	Rate        int      `json:"rate"` // events/s
	Burst       int      `json:"burst"`
	Seconds     float64  `json:"seconds"`
	Admitted    int64    `json:"admitted"`
	PerSec      float64  `json:"admitted_per_s"`
	Bound       float64  `json:"bound"`     // burst + rate x seconds
	ErrorPct    float64  `json:"error_pct"` // admitted against the bound, in percent
	WaitP50     float64  `json:"wait_p50_ms"`
	WaitP99     float64  `json:"wait_p99_ms"`
	WaitMax     float64  `json:"wait_max_ms"`
	RoundTrips  float64  `json:"round_trips"`             // per admitted event
	TripP99     float64  `json:"round_trip_p99_ms"`       // one command's, as the client saw it
	ServerUs    *float64 `json:"server_cpu_us,omitempty"` // INFO cpu, per admitted event; nil: unknown
	Jain        float64  `json:"jain"`
	FIFO        int64    `json:"fifo_violations"`
	Errors      int64    `json:"errors"`
	ErrorSample string   `json:"error_sample,omitempty"`
}

// fifoSlack is how much earlier a call must have begun than one that
// returned before it to count as served out of order: beyond the jitter of
// two calls' way to Redis (a goroutine's scheduling, a pooled connection)
// on a loaded machine.
const fifoSlack = 5 * time.Millisecond

// runRateLimit runs one cell: c.workers workers on c.procs Clients share
// one limiter, key under prefix, of cfg.rate events a second with a burst
// of cfg.burst, each
// asking for one event at a time, as fast as they are admitted, until
// cfg.duration has passed.
func runRateLimit(ctx context.Context, b *backend, cfg *config, c cell, prefix, key string) (rateRow, error) {
	var trips roundtrip.Counter
	lat := &latency{h: newHist()}
	var takers []func(context.Context) error
	var closers []func()
	defer func() {
		for _, f := range slices.Backward(closers) {
			f()
		}
	}()
	limit := rratelimit.Limit{Events: cfg.rate, Per: time.Second, Burst: cfg.burst}
	peerLimit := redis_rate.Limit{Rate: cfg.rate, Period: time.Second, Burst: cfg.burst}
	peerKey := prefix + ":" + key // redis_rate adds "rate:" before it
	n := max(1, min(c.procs, c.workers))
	for i := range n {
		rdb := b.client(c.workers/n + 1)
		rdb.AddHook(&trips)
		rdb.AddHook(lat)
		if c.ct.name == "redis_rate" {
			closers = append(closers, func() { _ = rdb.Close() })
			peer := redis_rate.NewLimiter(rdb)
			if i == 0 { // a run's limiter, whatever an earlier one left
				if err := peer.Reset(ctx, peerKey); err != nil {
					return rateRow{}, err
				}
				closers = append(closers, func() { _ = peer.Reset(context.Background(), peerKey) })
			}
			takers = append(takers, func(ctx context.Context) error { return allowRetry(ctx, peer, peerKey, peerLimit) })
			continue
		}
		rc, err := redcoord.New(rdb, redcoord.WithPrefix(prefix), redcoord.WithLogger(cfg.logger))
		if err != nil {
			_ = rdb.Close()
			return rateRow{}, err
		}
		closers = append(closers, func() { _ = rc.Close(context.Background()); _ = rdb.Close() })
		lim := rratelimit.New(rc, key, limit)
		if i == 0 { // a run's limit, whatever an earlier one left
			if err := lim.SetLimit(ctx, limit); err != nil {
				return rateRow{}, err
			}
		} else if _, err := lim.Limit(ctx); err != nil { // scripts loaded, the connection open
			return rateRow{}, err
		}
		takers = append(takers, lim.Wait)
	}
	probe := b.client(1)
	defer probe.Close()
	cpu0, cpuOK := readCPU(roundtrip.Uncounted(ctx), probe)
	trips.Reset()
	lat.reset()

	var (
		mu      sync.Mutex // protects what follows
		waits   = newHist()
		counts  = make([]int64, c.workers)
		served  []served
		errs    int64
		sample  string
		wg      sync.WaitGroup
		start   = time.Now()
		end     = start.Add(cfg.duration)
		cellCtx context.Context
		cancel  context.CancelFunc
	)
	cellCtx, cancel = context.WithDeadline(ctx, end)
	defer cancel()
	for w := range c.workers {
		take := takers[w%n]
		wg.Go(func() {
			for cellCtx.Err() == nil {
				t0 := time.Now()
				err := take(cellCtx)
				t1 := time.Now()
				if errors.Is(err, context.DeadlineExceeded) {
					return // the cell ends before this worker's next slot
				}
				mu.Lock()
				if err == nil {
					record(waits, t1.Sub(t0))
					counts[w]++
					served = append(served, struct{ began, done time.Time }{t0, t1})
				} else {
					errs++
					if sample == "" {
						sample = err.Error()
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu1, cpuOK1 := readCPU(roundtrip.Uncounted(ctx), probe)

	var admitted int64
	for _, n := range counts {
		admitted += n
	}
	secs := cfg.duration.Seconds()
	// A take sent just before the cell's end may be admitted after it: the
	// bound is over the cell as it ran, to its last admission.
	bound := float64(cfg.burst) + float64(cfg.rate)*elapsed.Seconds()
	row := rateRow{
		Lock: c.ct.name, Workers: c.workers, Procs: n, Rate: cfg.rate, Burst: cfg.burst, Seconds: elapsed.Seconds(),
		Admitted: admitted, PerSec: float64(admitted) / secs,
		Bound: bound, ErrorPct: 100 * (float64(admitted) - bound) / bound,
		WaitP50: ms(waits, 50), WaitP99: ms(waits, 99), WaitMax: ms(waits, 100), TripP99: lat.p99(),
		Jain: jain(counts), FIFO: fifoViolations(served), Errors: errs, ErrorSample: sample,
	}
	if admitted > 0 {
		row.RoundTrips = float64(trips.Load()) / float64(admitted)
		if cpuOK && cpuOK1 {
			row.ServerUs = ptr((cpu1 - cpu0) / float64(admitted))
		}
	}
	return row, nil
}

// latency records how long each command takes from the client's call to
// its reply: the round trip a wait includes beside its sleep.
type latency struct {
	mu sync.Mutex // protects h
	h  *hdrhistogram.Histogram
}

func (l *latency) DialHook(next redis.DialHook) redis.DialHook { return next }

func (l *latency) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		t0 := time.Now()
		err := next(ctx, cmd)
		d := time.Since(t0)
		l.mu.Lock()
		record(l.h, d)
		l.mu.Unlock()
		return err
	}
}

func (l *latency) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (l *latency) reset() {
	l.mu.Lock()
	l.h.Reset()
	l.mu.Unlock()
}

func (l *latency) p99() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return ms(l.h, 99)
}

// served is one admitted call: when it began and when it returned.
type served = struct{ began, done time.Time }

// allowRetry takes one event from redis_rate the way its README shows:
// Allow, and while it refuses, sleep RetryAfter and try again.
func allowRetry(ctx context.Context, lim *redis_rate.Limiter, key string, limit redis_rate.Limit) error {
	for {
		r, err := lim.Allow(ctx, key, limit)
		if err != nil || r.Allowed > 0 {
			return err
		}
		t := time.NewTimer(r.RetryAfter)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: %w", redcoord.ErrNotAcquired, ctx.Err())
		case <-t.C:
		}
	}
}

// fifoViolations counts the calls that returned after a call that began
// more than fifoSlack after them: served out of their arrival order.
func fifoViolations(s []served) int64 {
	slices.SortFunc(s, func(a, b served) int { return a.done.Compare(b.done) })
	var n int64
	var latest time.Time // the latest beginning among the calls returned so far
	for _, x := range s {
		if x.began.Add(fifoSlack).Before(latest) {
			n++
		}
		if x.began.After(latest) {
			latest = x.began
		}
	}
	return n
}

// rateSection is the ratelimit scenario's table.
func rateSection(r *results) section {
	t := section{
		title: "ratelimit: workers share one limiter; each asks for one event at a time, as fast as it is admitted; " +
			"bound: burst + rate x seconds run" +
			"\n  all Clients run in this process; round trips and server CPU µs (INFO cpu) are per admitted event; " +
			"trip p99: one command's, call to reply; " +
			"FIFO viol.: calls served after a call that began more than 5ms after them",
		keys:  3,
		head1: "\t\t\t\t\tadmitted\t\terror\twait\twait\twait\tround\ttrip\tserver\t\tFIFO\t",
		head2: "lock\tworkers\tclients\trate\tburst\t/s\tbound\t%\tp50 ms\tp99 ms\tmax ms\ttrips\tp99 ms\tµs\tJain\tviol.\t",
	}
	for _, m := range r.RateLimit {
		t.add(m.Lock, fmt.Sprintf("ratelimit %s, %d workers on %s", m.Lock, m.Workers, clients(m.Procs)),
			m.Errors, m.ErrorSample,
			"%s\t%d\t%d\t%d\t%d\t%.1f\t%.0f\t%+.2f\t%.1f\t%.1f\t%.1f\t%.2f\t%.1f\t%s\t%.3f\t%d\t",
			m.Lock, m.Workers, m.Procs, m.Rate, m.Burst, m.PerSec, m.Bound, m.ErrorPct, m.WaitP50, m.WaitP99, m.WaitMax,
			m.RoundTrips, m.TripP99, micros(m.ServerUs), m.Jain, m.FIFO)
	}
	return t
}
