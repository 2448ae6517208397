package chaos

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
)

// Two guards keep a schedule from crashing or hanging the test binary.
//
// One P: the bubble tier runs with GOMAXPROCS 1. Under -race, Go 1.26's
// runtime runs a bubble's timer that has already expired when a goroutine
// receives from its channel (time.NewTimer(0), which go-redis's retry
// back-off of 0 makes) on that goroutine's own thread, with the race
// context of the bubble's timer heap; two goroutines doing so at once share
// that context from two threads, and ThreadSanitizer crashes the binary
// (SIGSEGV in __tsan::SlotLock under timer.maybeRunChan, or "CHECK
// failed"; the same symptom as golang/go#78156). With one P no two threads
// run the bubble's Go code at once. A positive back-off is no way out: go-
// redis's PubSub sleeps it with its mutex held, and a goroutine waiting
// for a mutex is not durably blocked, so the bubble's clock would stop.
//
// Real-time bound: a schedule that has not ended after stallBound of real
// time (a stopped bubble clock, a deadlock in the library or the suite)
// ends the test binary with its primitive, its seed, its last events and
// every goroutine's stack, instead of hanging until go test's timeout.

// stallBound is far above what a schedule takes (a second or two with
// -race on a loaded machine).
const stallBound = 2 * time.Minute

// oneP sets GOMAXPROCS to 1 and returns what restores it.
func oneP() func() {
	prev := runtime.GOMAXPROCS(1)
	return func() { runtime.GOMAXPROCS(prev) }
}

// progress is what the watchdog prints about the schedule in progress.
type progress struct {
	mu  sync.Mutex
	rec *recorder
}

func (p *progress) set(r *recorder) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rec = r
}

// last returns the last n events recorded so far, in the order recorded.
func (p *progress) last(n int) string {
	p.mu.Lock()
	r := p.rec
	p.mu.Unlock()
	if r == nil {
		return "(no history yet)"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ev := r.events[max(0, len(r.events)-n):]
	s := ""
	for _, e := range ev {
		s += e.String() + "\n"
	}
	return s
}

// watch starts the real-time bound of one schedule (from outside any
// bubble: its timer runs on the real clock) and returns what stops it.
func watch(prim string, seed uint64, p *progress) (stop func()) {
	t := time.AfterFunc(stallBound, func() {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		fmt.Fprintf(os.Stderr, "chaos: %s seed=%d has not ended after %v of real time\nreplay: REDCOORD_CHAOS_SEED=%d go test ./internal/chaos -run 'TestChaos/%s$'\nlast events:\n%s\ngoroutines:\n%s\n",
			prim, seed, stallBound, seed, prim, p.last(20), buf)
		panic(fmt.Sprintf("chaos: %s seed=%d made no progress", prim, seed))
	})
	return func() { t.Stop() }
}
