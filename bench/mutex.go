package main

import (
	"context"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// recorder is the harness's own view of the lock: who holds it, who waits
// since when. It trusts nothing the lock says: a second worker inside at
// once is a mutual-exclusion violation whatever the lock replied.
type recorder struct {
	start time.Time

	mu          sync.Mutex // protects everything below
	inside      int        // workers between Lock's return and their Unlock call
	lastRelease time.Time  // the last Unlock call; zero before the first
	waiting     []time.Time
	counts      []int64
	waits, gaps *hdrhistogram.Histogram
	fifo, me    int64
	errors      int64
	errSample   string
}

func newRecorder(workers int) *recorder {
	return &recorder{
		start:   time.Now(),
		waiting: make([]time.Time, workers),
		counts:  make([]int64, workers),
		waits:   newHist(),
		gaps:    newHist(),
	}
}

// wait marks worker w as waiting from now and returns the time.
func (r *recorder) wait(w int) time.Time {
	now := time.Now()
	r.mu.Lock()
	r.waiting[w] = now
	r.mu.Unlock()
	return now
}

// acquired records worker w's return from Lock with the lock held.
func (r *recorder) acquired(w int) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	t0 := r.waiting[w]
	r.waiting[w] = time.Time{}
	r.inside++
	if r.inside > 1 {
		r.me++
	}
	r.counts[w]++
	_ = r.waits.RecordValue(now.Sub(t0).Microseconds())
	if !r.lastRelease.IsZero() && t0.Before(r.lastRelease) {
		_ = r.gaps.RecordValue(now.Sub(r.lastRelease).Microseconds())
	}
	for v, since := range r.waiting {
		if v != w && !since.IsZero() && since.Before(t0.Add(-fifoSlack)) {
			r.fifo++
			break
		}
	}
}

// failed records a Lock that returned an error: worker w waits no more.
func (r *recorder) failed(w int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waiting[w] = time.Time{}
	if err != nil {
		r.fail(err)
	}
}

// releasing records worker w's call to Unlock: from here the harness no
// longer counts it inside, though Redis may still, for a round trip.
func (r *recorder) releasing() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inside--
	r.lastRelease = time.Now()
}

// fail counts an error, keeping the first as a sample; r.mu is held.
func (r *recorder) fail(err error) {
	r.errors++
	if r.errSample == "" {
		r.errSample = err.Error()
	}
}

func (r *recorder) unlockFailed(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail(err)
}

// runMutex runs one cell: workers lock, hold, unlock until cfg.duration
// passes or ctx is done. A Lock cut short by the end of the cell is neither
// an acquisition nor an error.
func runMutex(ctx context.Context, f *fleet, cfg *config, ct contender) mutexRow {
	workers := len(f.locks)
	cctx, cancel := context.WithTimeout(ctx, cfg.duration)
	defer cancel()
	r := newRecorder(workers)
	var wg sync.WaitGroup
	for w, lk := range f.locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for cctx.Err() == nil {
				r.wait(w)
				if err := lk.Lock(cctx); err != nil {
					if cctx.Err() != nil {
						err = nil
					}
					r.failed(w, err)
					continue
				}
				late := cctx.Err() != nil // the cell ended as Lock returned
				if late {
					r.failed(w, nil)
				} else {
					r.acquired(w)
					time.Sleep(cfg.hold)
					r.releasing()
				}
				uctx, ucancel := unlockCtx()
				if err := lk.Unlock(uctx); err != nil {
					r.unlockFailed(err)
				}
				ucancel()
			}
		}()
	}
	<-cctx.Done()
	elapsed := time.Since(r.start)
	wg.Wait()
	trips := f.trips.Load()

	r.mu.Lock()
	defer r.mu.Unlock()
	row := mutexRow{
		Lock:        ct.name,
		Workers:     workers,
		Seconds:     elapsed.Seconds(),
		WaitP50:     ms(r.waits, 50),
		WaitP99:     ms(r.waits, 99),
		WaitMax:     ms(r.waits, 100),
		GapP50:      ms(r.gaps, 50) * 1000,
		Gaps:        r.gaps.TotalCount(),
		Jain:        jain(r.counts),
		FIFO:        r.fifo,
		ME:          r.me,
		Errors:      r.errors,
		ErrorSample: r.errSample,
		PerWorker:   r.counts,
		WaitDist:    dist(r.waits),
	}
	for _, c := range r.counts {
		row.Acquisitions += c
	}
	row.AcqPerSec = float64(row.Acquisitions) / row.Seconds
	if row.Acquisitions > 0 {
		row.RoundTrips = float64(trips) / float64(row.Acquisitions)
	}
	return row
}
