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
	start, end time.Time // of the cell: waits still running at end count up to it

	mu          sync.Mutex  // protects everything below
	inside      int         // workers between Lock's return and their Unlock call
	lastRelease time.Time   // the last Unlock call; zero before the first
	waiting     []time.Time // by worker: when its current wait began; zero: not waiting
	waited      []bool      // by worker: a wait of its has ended (its first was the start-up rush)
	counts      []int64     // by worker: acquisitions
	waits, gaps *hdrhistogram.Histogram
	fifo        int64 // acquisitions that overtook a longer waiter (see fifoSlack)
	me          int64 // acquisitions made while another worker was inside
	unfinished  int64 // waits cut short by the end of the cell
	errors      int64
	errSample   string
}

// newRecorder returns the recorder of a cell of the given length, from now.
func newRecorder(workers int, length time.Duration) *recorder {
	now := time.Now()
	return &recorder{
		start:   now,
		end:     now.Add(length),
		waiting: make([]time.Time, workers),
		waited:  make([]bool, workers),
		counts:  make([]int64, workers),
		waits:   newHist(),
		gaps:    newHist(),
	}
}

// wait marks worker w as waiting from now.
func (r *recorder) wait(w int) {
	now := time.Now()
	r.mu.Lock()
	r.waiting[w] = now
	r.mu.Unlock()
}

// acquired records worker w's return from Lock with the lock held.
func (r *recorder) acquired(w int) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	t0 := r.waiting[w]
	r.inside++
	if r.inside > 1 {
		r.me++
	}
	r.counts[w]++
	record(r.waits, now.Sub(t0))
	if !r.lastRelease.IsZero() && t0.Before(r.lastRelease) {
		record(r.gaps, now.Sub(r.lastRelease))
	}
	if r.waited[w] {
		for v, since := range r.waiting {
			if v != w && r.waited[v] && !since.IsZero() && since.Before(t0.Add(-fifoSlack)) {
				r.fifo++
				break
			}
		}
	}
	r.waiting[w], r.waited[w] = time.Time{}, true
}

// failed records a Lock that returned without the lock: with err, a failure;
// with nil, a wait cut short by the end of the cell. Either way the time
// waited counts among the waits, up to the end of the cell.
func (r *recorder) failed(w int, err error) {
	now := time.Now()
	if now.After(r.end) {
		now = r.end
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	record(r.waits, now.Sub(r.waiting[w]))
	r.waiting[w], r.waited[w] = time.Time{}, true
	if err != nil {
		r.fail(err)
	} else {
		r.unfinished++
	}
}

// releasing records a worker's call to Unlock: from here the harness no
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

// unlockFailed counts an Unlock that returned an error.
func (r *recorder) unlockFailed(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail(err)
}

// runMutex runs one cell: workers lock, hold, unlock until cfg.duration
// passes or ctx is done. A Lock cut short by the end of the cell is neither
// an acquisition nor an error, but its wait counts.
func runMutex(ctx context.Context, f *fleet, cfg *config, ct contender) mutexRow {
	workers := len(f.locks)
	r := newRecorder(workers, cfg.duration)
	cctx, cancel := context.WithDeadline(ctx, r.end)
	defer cancel()
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
				if cctx.Err() != nil { // the cell ended as Lock returned
					r.failed(w, nil)
				} else {
					r.acquired(w)
					sleep(cctx, cfg.hold)
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
	trips := f.roundTrips() // before the cancelled waits' leave scripts
	wg.Wait()

	r.mu.Lock()
	defer r.mu.Unlock()
	row := mutexRow{
		Lock:        ct.name,
		Workers:     workers,
		Seconds:     elapsed.Seconds(),
		WaitP50:     ms(r.waits, 50),
		WaitP99:     ms(r.waits, 99),
		WaitMax:     ms(r.waits, 100),
		Unfinished:  r.unfinished,
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
		if c == 0 {
			row.Starved++
		}
	}
	row.AcqPerSec = float64(row.Acquisitions) / row.Seconds
	if row.Acquisitions > 0 {
		row.RoundTrips = float64(trips) / float64(row.Acquisitions)
	}
	return row
}

// sleep holds for d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
