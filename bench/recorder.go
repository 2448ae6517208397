package main

import (
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// recorder is the harness's own view of the locks: who holds each name and
// for what, who waits since when. Worker w takes name w % names (see
// spreadKey); workers on different names exclude nobody. It trusts nothing
// the lock says: on one name, a worker inside while a writer is, or a writer
// inside while limit workers are, is a violation whatever the lock replied.
// In the mutex and semaphore scenarios every acquisition is a write.
type recorder struct {
	start, end time.Time // of the cell: waits still running at end count up to it
	limit      int       // how many writers may be inside one name at once: 1, or a semaphore's permits
	names      int       // lock names the workers are spread over

	mu          sync.Mutex  // protects everything below
	writers     []int       // by name: workers between a write's return and their release call
	readers     []int       // by name: likewise, reads
	maxReaders  int         // the most readers inside one name at once
	maxInside   int         // the most workers inside one name at once, readers and writers
	lastRelease []time.Time // by name: the last release call; zero before the first
	waiting     []time.Time // by worker: when its current wait began; zero: not waiting
	queued      []time.Time // by worker: when its current wait's first reply from Redis came; zero: none yet
	shared      []bool      // by worker: its current wait or hold is a read
	counts      []int64     // by worker: acquisitions
	reads       int64       // acquisitions that were reads
	waits, gaps *hdrhistogram.Histogram
	writeWaits  *hdrhistogram.Histogram // the writes' waits only
	fifo        int64                   // acquisitions that overtook limit earlier waiters (see overtaken)
	me          int64                   // acquisitions that broke exclusion: past the limit, or beside a writer
	unfinished  int64                   // waits cut short by the end of the cell
	errors      int64
	errSample   string
}

// newRecorder returns the recorder of a cell of the given length, from now,
// in which workers are spread over names lock names and at most limit
// writers may be inside one name at once.
func newRecorder(workers, names, limit int, length time.Duration) *recorder {
	now := time.Now()
	return &recorder{
		start:       now,
		end:         now.Add(length),
		limit:       limit,
		names:       names,
		writers:     make([]int, names),
		readers:     make([]int, names),
		lastRelease: make([]time.Time, names),
		waiting:     make([]time.Time, workers),
		queued:      make([]time.Time, workers),
		shared:      make([]bool, workers),
		counts:      make([]int64, workers),
		waits:       newHist(),
		gaps:        newHist(),
		writeWaits:  newHist(),
	}
}

// wait marks worker w as waiting from now, for a read if shared.
func (r *recorder) wait(w int, shared bool) {
	now := time.Now()
	r.mu.Lock()
	r.waiting[w], r.queued[w], r.shared[w] = now, time.Time{}, shared
	r.mu.Unlock()
}

// replied records that a command of worker w's current wait got its reply
// from Redis (see replyHook): the first one, when the wait has not taken
// the lock, left the worker's request in Redis's order of waiters (a queue
// entry, a registration, or a lock key it will retry against).
func (r *recorder) replied(w int) {
	now := time.Now()
	r.mu.Lock()
	if !r.waiting[w].IsZero() && r.queued[w].IsZero() {
		r.queued[w] = now
	}
	r.mu.Unlock()
}

// acquired records worker w's return from its wait with the lock held.
func (r *recorder) acquired(w int) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	t0, n := r.waiting[w], r.name(w)
	if r.shared[w] {
		if r.writers[n] > 0 {
			r.me++
		}
		r.readers[n]++
		r.reads++
		r.maxReaders = max(r.maxReaders, r.readers[n])
	} else {
		if r.writers[n]+r.readers[n] >= r.limit {
			r.me++
		}
		r.writers[n]++
	}
	r.maxInside = max(r.maxInside, r.writers[n]+r.readers[n])
	r.counts[w]++
	r.recordWait(w, now.Sub(t0))
	if last := r.lastRelease[n]; !last.IsZero() && t0.Before(last) {
		record(r.gaps, now.Sub(last))
	}
	if r.overtaken(w, t0) >= r.limit {
		r.fifo++
	}
	r.waiting[w], r.queued[w] = time.Time{}, time.Time{}
}

// name returns worker w's lock name, from 0 to r.names-1.
func (r *recorder) name(w int) int { return w % r.names }

// overtaken counts the workers still waiting on w's name whose wait had its
// first reply from Redis before t0, when worker w called Lock; r.mu is
// held. Each of them was in Redis's order of waiters before w's first
// command was even sent, whatever the goroutine scheduler did with the
// calls: in FIFO order each was served before w, and holds its place while
// its reply travels, so with limit places at most limit-1 of them can still
// be on their way when w returns. limit or more is an overtaking.
func (r *recorder) overtaken(w int, t0 time.Time) int {
	n := 0
	for v, since := range r.queued {
		if v != w && r.name(v) == r.name(w) && !since.IsZero() && since.Before(t0) {
			n++
		}
	}
	return n
}

// failed records a wait that ended without the lock: with err, a failure;
// with nil, a wait cut short by the end of the cell. Either way the time
// waited counts among the waits, up to the end of the cell.
func (r *recorder) failed(w int, err error) {
	now := time.Now()
	if now.After(r.end) {
		now = r.end
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recordWait(w, now.Sub(r.waiting[w]))
	r.waiting[w], r.queued[w] = time.Time{}, time.Time{}
	if err != nil {
		r.fail(err)
	} else {
		r.unfinished++
	}
}

// recordWait adds worker w's wait d to the waits; r.mu is held.
func (r *recorder) recordWait(w int, d time.Duration) {
	record(r.waits, d)
	if !r.shared[w] {
		record(r.writeWaits, d)
	}
}

// releasing records worker w's call to release: from here the harness no
// longer counts it inside, though Redis may still, for a round trip.
func (r *recorder) releasing(w int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.name(w)
	if r.shared[w] {
		r.readers[n]--
	} else {
		r.writers[n]--
	}
	r.lastRelease[n] = time.Now()
}

// fail counts an error, keeping the first as a sample; r.mu is held.
func (r *recorder) fail(err error) {
	r.errors++
	if r.errSample == "" {
		r.errSample = err.Error()
	}
}

// releaseFailed counts a release that returned an error.
func (r *recorder) releaseFailed(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail(err)
}

// common returns the figures of contender lock's cell, which ran in procs
// Clients for elapsed at cost c. Call it once the workers have stopped.
func (r *recorder) common(lock string, procs int, elapsed time.Duration, c cost) common {
	out := common{
		Lock:        lock,
		Workers:     len(r.counts),
		Procs:       procs,
		Seconds:     elapsed.Seconds(),
		WaitP50:     ms(r.waits, 50),
		WaitP99:     ms(r.waits, 99),
		WaitMax:     ms(r.waits, 100),
		Unfinished:  r.unfinished,
		Jain:        jain(r.counts),
		Errors:      r.errors,
		ErrorSample: r.errSample,
		PerWorker:   r.counts,
		WaitDist:    dist(r.waits),
	}
	if r.names > 1 {
		out.Names = r.names
	}
	for _, n := range r.counts {
		out.Acquisitions += n
		if n == 0 {
			out.Starved++
		}
	}
	out.AcqPerSec = float64(out.Acquisitions) / out.Seconds
	out.RoundTrips, out.ServerUs = c.per(out.Acquisitions)
	return out
}
