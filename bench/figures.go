package main

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// common are the figures every lock cell has, mutex, rwlock or semaphore:
// one contender at one worker count. Times are in milliseconds unless the
// name says otherwise. An acquisition is a return from Lock (or RLock, or
// Acquire) with the lock (or a permit) held.
type common struct {
	Lock         string  `json:"lock"`
	Workers      int     `json:"workers"`
	Names        int     `json:"names,omitempty"` // -names: worker i on name i mod Names; 0 (omitted): one name
	Procs        int     `json:"procs"`           // Clients the workers were spread over (-procs)
	Seconds      float64 `json:"seconds"`
	Acquisitions int64   `json:"acquisitions"`
	AcqPerSec    float64 `json:"acq_per_sec"`
	// Waits run from the call to Lock to its return, or to the end of the
	// cell for a wait still running then (Unfinished counts those), or to a
	// failure.
	WaitP50    float64 `json:"wait_p50_ms"`
	WaitP99    float64 `json:"wait_p99_ms"`
	WaitMax    float64 `json:"wait_max_ms"`
	Unfinished int64   `json:"unfinished_waits"`
	Starved    int     `json:"starved_workers"` // workers that never acquired in the cell
	// RoundTrips counts every command and pipeline, and the Hubs' SUBSCRIBE
	// and UNSUBSCRIBE, read as the cell ends, over acquisitions.
	RoundTrips float64 `json:"round_trips_per_acq"`
	// ServerUs is the µs the server spent running the cell's commands, from
	// INFO commandstats as the cell ends (see clientMicros), over
	// acquisitions; omitted where the server gives no commandstats
	// (miniredis) and for a cell without acquisitions.
	ServerUs    *float64 `json:"server_us_per_acq,omitempty"`
	Jain        float64  `json:"jain"`
	Errors      int64    `json:"errors"`
	ErrorSample string   `json:"error_sample,omitempty"`
	PerWorker   []int64  `json:"per_worker_acquisitions"`
	// WaitDist is the wait-time distribution: the wait at each quantile.
	WaitDist []quantile `json:"wait_distribution"`
}

// figures returns the common figures of any row that embeds them.
func (c common) figures() common { return c }

// mutexRow is one cell of the mutex scenario.
type mutexRow struct {
	common
	// GapP50 is the median hand-off gap, in µs: from the holder's call to
	// Unlock to the next holder's return from Lock, over acquisitions whose
	// waiter was already waiting when Unlock was called. It includes the
	// release's own round trip. Gaps counts them; 0 gaps gives GapP50 0.
	GapP50 float64 `json:"handoff_gap_p50_us"`
	Gaps   int64   `json:"handoff_gaps"`
	// FIFO counts acquisitions that overtook a worker on the same name who
	// was in Redis's order of waiters first: whose wait had had its first
	// reply from Redis before the overtaking worker called Lock (see
	// recorder.overtaken). A FIFO lock shows 0, whatever the scheduler does
	// with the calls.
	FIFO int64 `json:"fifo_violations"`
	// ME counts acquisitions made while anyone was inside the same name:
	// it must be 0.
	ME int64 `json:"mutual_exclusion_violations"`
}

// rwRow is one cell of the rwlock scenario: one contender, one mix, one
// worker count. Each acquisition is a read or a write, drawn by the mix.
type rwRow struct {
	Mix     string `json:"mix"`      // "read-mostly 95%"
	ReadPct int    `json:"read_pct"` // the chance that an acquisition is a read
	common
	Reads  int64 `json:"reads"`
	Writes int64 `json:"writes"`
	// XRlock is AcqPerSec over that of the rlock row of the same mix and
	// worker count in the run; 0 when there is none.
	XRlock       float64 `json:"x_rlock,omitempty"`
	WriteWaitP99 float64 `json:"write_wait_p99_ms"` // writes' waits only
	MaxReaders   int     `json:"max_concurrent_readers"`
	// ME counts writes made while anyone was inside, and reads made while
	// a writer was: it must be 0.
	ME int64 `json:"mutual_exclusion_violations"`
}

// semRow is one cell of the semaphore scenario: one contender, one worker
// count. Each acquisition takes one of Permits permits.
type semRow struct {
	Permits int `json:"permits"`
	common
	// MaxInside is the most workers the harness saw holding a permit of one
	// semaphore at once.
	MaxInside int `json:"max_holders"`
	// FIFO counts acquisitions made while Permits or more workers on the
	// same semaphore who were in Redis's order of waiters first (as in
	// mutexRow) were still waiting. Fewer is no violation: in FIFO order
	// each of them was served first, and its reply may still be on its way,
	// holding one of the other permits.
	FIFO int64 `json:"fifo_violations"`
	// OverLimit counts acquisitions made while Permits workers were inside
	// the same semaphore already: it must be 0.
	OverLimit int64 `json:"over_limit_violations"`
}

// seckillRow is one contender's flash sale.
type seckillRow struct {
	Lock        string  `json:"lock"`
	Orders      int     `json:"orders"`
	Concurrency int     `json:"concurrency"`
	Procs       int     `json:"procs"` // Clients the orders were spread over (-procs)
	Stock       int     `json:"stock"`
	Seconds     float64 `json:"seconds"`
	OrdersPerS  float64 `json:"orders_per_sec"`
	Sold        int64   `json:"sold"`
	SoldOut     int64   `json:"sold_out"` // answered "no stock left"
	Failed      int64   `json:"failed"`   // no answer: the lock or Redis failed
	Errors      int64   `json:"errors"`   // failed orders, and Unlocks that failed after an answer
	// Latency is of every order, failed ones included.
	LatencyP50 float64 `json:"latency_p50_ms"`
	LatencyP99 float64 `json:"latency_p99_ms"`
	LatencyMax float64 `json:"latency_max_ms"`
	// Oversold is sold - (stock - stock left): items sold twice because two
	// buyers read the same count. It must be 0 under a lock.
	Oversold    int64    `json:"oversold"`
	StockLeft   int64    `json:"stock_left"`
	RoundTrips  float64  `json:"round_trips_per_order"`
	ServerUs    *float64 `json:"server_us_per_order,omitempty"` // as in common
	ErrorSample string   `json:"error_sample,omitempty"`
}

type quantile struct {
	Q  float64 `json:"q"` // percent
	Ms float64 `json:"ms"`
}

// distQuantiles are the quantiles of the wait distribution kept per row.
var distQuantiles = []float64{0, 10, 25, 50, 75, 90, 95, 99, 99.9, 100}

// newHist returns a histogram of µs from 0 to maxSpan, 3 digits.
func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(0, int64(maxSpan/time.Microsecond), 3)
}

// record adds d to h, in µs; the flags keep d within h's range, and a value
// beyond it is clamped, not dropped.
func record(h *hdrhistogram.Histogram, d time.Duration) {
	_ = h.RecordValue(min(max(d, 0), maxSpan).Microseconds())
}

// ms is the value of h at quantile q (percent), in milliseconds.
func ms(h *hdrhistogram.Histogram, q float64) float64 {
	if h.TotalCount() == 0 {
		return 0
	}
	if q >= 100 {
		return float64(h.Max()) / 1000
	}
	return float64(h.ValueAtQuantile(q)) / 1000
}

// dist samples h at distQuantiles.
func dist(h *hdrhistogram.Histogram) []quantile {
	if h.TotalCount() == 0 {
		return nil
	}
	out := make([]quantile, len(distQuantiles))
	for i, q := range distQuantiles {
		out[i] = quantile{Q: q, Ms: ms(h, q)}
	}
	return out
}

// jain is Jain's fairness index of counts: 1 when all are equal, 1/n when
// one worker has everything.
func jain(counts []int64) float64 {
	var sum, squares float64
	for _, c := range counts {
		sum += float64(c)
		squares += float64(c) * float64(c)
	}
	if squares == 0 {
		return 0
	}
	return sum * sum / (float64(len(counts)) * squares)
}
