package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing/synctest"
	"time"

	"github.com/redcoord/redcoord"
)

// The driver: one goroutine that draws each step from the schedule's source
// and issues it at an instant of the clock; every operation runs in a
// goroutine of its own. In the bubble tier, synctest.Wait after each step
// lets everything the step set off run until it blocks, so the next draw
// sees a state that depends on the seed alone. The same holds for every
// other action of the driver that wakes goroutines (a sleep that ends, a
// heal that breaks connections): it settles before it next reads which
// handles are busy or hold. A read before that races with the goroutines
// woken, and which of them ran first is the scheduler's choice (one that
// load, through preemption, changes).

// livenessBound is how long after faults stop a waiter may still wait: one
// lease (a holder that went away, or a grant to a waiter that did) and the
// millisecond after it at which a waiter's timed re-check comes (recheck),
// plus one poll interval (a lost wake-up), plus the driver's own delay in
// releasing a hold taken meanwhile. quietBound adds what each further hold
// taken meanwhile costs.
const livenessBound = leaseTTL + recheck + maxPoll + quietTick

// recheck is how long after the blocker's lease runs out a waiter's timed
// re-check may come: package acquire sets its timer to the blocker's remaining
// lease, as the try script tells it in whole milliseconds, plus a
// millisecond of slack for the clock's granularity ("in any case re-tries
// ... when the blocker's lease runs out", package redcoord, Waiting).
const recheck = time.Millisecond

// quietTick is how often the quiet phase looks for holds to release.
const quietTick = maxPoll / 4

type run struct {
	seed   uint64
	prim   primitive
	c      caps
	w      *world
	rec    *recorder
	r      *rand.Rand
	bubble bool
	yield  bool // the driver gives way before it reads a handle's state (TestReplay)
	sound  bool // the simulated network never faults (TestReplay)

	hs    []handle
	hproc []int // the process of each handle

	mu         sync.Mutex // protects busy, windows, violations
	busy       []bool     // an operation of the handle is in flight
	windows    []window
	violations []violation
	wg         sync.WaitGroup

	ops, faults int
	heals       []heal // faults to end, in order of at
	wd          widening

	waits   []waitRec    // blocking acquires that returned (protected by mu)
	waiting atomic.Int32 // blocking acquires in flight
	samples []sample     // the driver's samples of Redis (stranded_test.go)
	names   []string     // the names sampled
	ft      faultTrack   // the driver's view of faults in effect
}

type heal struct {
	at   time.Duration
	proc int
	kind faultKind
}

func newRun(seed uint64, p primitive, w *world, bubble bool) *run {
	rn := &run{seed: seed, prim: p, c: p.caps(), w: w, rec: newRecorder(), r: newRand(seed), bubble: bubble}
	rn.rec.bubble = bubble
	for pi := range w.procs {
		for i := range handlesPerProc {
			rn.hs = append(rn.hs, p.handle(w, pi, i, rn.r))
			rn.hproc = append(rn.hproc, pi)
		}
	}
	rn.busy = make([]bool, len(rn.hs))
	return rn
}

// apart is how far the bubble's clock moves after every operation the
// driver starts, and is added to every sleep of the driver: no two of the
// suite's events (an operation's start, its deadline, its cancel) share an
// instant, so no two goroutines woken by them race to the server.
const apart = time.Microsecond

// settle lets what a step set off run until it blocks.
func (rn *run) settle() {
	if rn.bubble {
		synctest.Wait()
	} else {
		time.Sleep(time.Millisecond)
	}
}

// sleep moves the clock on by d, and apart, and in the bubble settles:
// goroutines whose timers fire at the instant the driver wakes run until
// they block before the driver reads the state its next draw depends on.
//
// In the bubble the driver wakes every sampleEvery of a long sleep to
// sample Redis (stranded_test.go): it only reads, so what the others do
// does not depend on it.
func (rn *run) sleep(d time.Duration) {
	if !rn.bubble {
		time.Sleep(d + apart)
		return
	}
	for ; d > sampleEvery; d -= sampleEvery {
		time.Sleep(sampleEvery)
		synctest.Wait()
		rn.sample()
	}
	time.Sleep(d + apart)
	synctest.Wait()
	rn.sample()
}

// drive runs the steps with faults, then the quiet phase.
func (rn *run) drive() {
	for range stepsPerSchedule {
		rn.sleep(drawGap(rn.r))
		rn.healDue()
		if rn.r.IntN(5) == 0 {
			rn.inject(rn.widenFault(drawFault(rn.r, len(rn.w.procs))))
		} else {
			h := rn.r.IntN(len(rn.hs))
			if rn.isBusy(h) || rn.w.procs[rn.hproc[h]].closed {
				if rn.isBusy(h) && !rn.w.procs[rn.hproc[h]].closed {
					rn.busyStep(h)
				}
				rn.settle()
				continue
			}
			live := 0
			for _, p := range rn.w.procs {
				if !p.closed {
					live++
				}
			}
			rn.issueWidened(drawOp(rn.r, rn.c, h, rn.rec.holding(h, false), rn.rec.holding(h, true), live > 2))
		}
		rn.settle()
	}
	rn.quiet()
}

// isBusy reports whether an operation of h is in flight. Every draw and
// every look of the quiet phase asks it first; with yield set the driver
// lets every runnable goroutine go first, as a preemption of the driver
// there would, so that a look taken before the state settled shows up as
// a difference between two runs of one seed.
func (rn *run) isBusy(h int) bool {
	if rn.yield {
		runtime.Gosched()
	}
	rn.mu.Lock()
	defer rn.mu.Unlock()
	return rn.busy[h]
}

func (rn *run) violate(v violation) {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	rn.violations = append(rn.violations, v)
}

// opContext is the context an operation is called with, and what ends it.
func opContext(o opStep) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	switch {
	case o.done:
		cancel()
		return ctx, cancel
	case o.cancel > 0:
		// Two nanoseconds late, as withDeadline's end: the wait's poll
		// timer, a multiple of maxPoll from its start as o.cancel is, fires
		// first, and whether it tries once more is not the scheduler's
		// choice.
		t := time.AfterFunc(o.cancel+2*time.Nanosecond, cancel)
		return ctx, func() { t.Stop(); cancel() }
	case o.ctxDur > 0:
		return withDeadline(ctx, cancel, o.ctxDur)
	}
	return ctx, cancel
}

// ctxEnd is how long after the call o's context ends; a long time for one
// that does not.
func ctxEnd(o opStep) time.Duration {
	switch {
	case o.done:
		return 0
	case o.cancel > 0:
		return o.cancel
	case o.ctxDur > 0:
		return o.ctxDur
	}
	return time.Hour
}

// issue starts o in a goroutine of its own and, in the bubble, lets it run
// until it blocks, then moves the clock on by apart. quiet marks the acquires of the
// quiet phase: they release at once, and their wait is checked.
func (rn *run) issue(o opStep, quiet bool) {
	h, proc := rn.hs[o.h], rn.hproc[o.h]
	what := o.String()
	if quiet {
		what = "quiet " + what
	}
	seq := rn.rec.call(o.h, proc, what, h.names())
	rn.ops++
	rn.mu.Lock()
	rn.busy[o.h] = true
	rn.mu.Unlock()
	var u *unlock
	switch o.kind {
	case oRelease:
		u = rn.rec.unlockCall(o.h, o.a.read)
	case oClose:
		rn.w.procs[proc].closed = true
		rn.rec.closing(proc)
	}
	ctx, cancel := opContext(o)
	rn.wg.Add(1)
	go func() {
		defer rn.wg.Done()
		defer cancel()
		res := rn.exec(ctx, seq, o, quiet)
		if u != nil {
			rn.unlocked(u, seq, res)
		}
		rn.rec.ret(seq, o.h, proc, what, res)
		rn.mu.Lock()
		rn.busy[o.h] = false
		rn.mu.Unlock()
	}()
	// The operation's first request goes out before the next one's.
	rn.settle()
	if rn.bubble {
		rn.sleep(0)
	}
}

// exec runs one operation and says how it ended.
func (rn *run) exec(ctx context.Context, seq int, o opStep, quiet bool) string {
	h, proc := rn.hs[o.h], rn.hproc[o.h]
	called := rn.rec.now()
	switch o.kind {
	case oAcquire:
		if rn.c.reentrant && !o.a.read && rn.rec.holding(o.h, false) {
			// A re-entry names the hold it re-enters by a context of it
			// (see "Sharing a handle" at redcoord.Locker).
			hctx, cancel := h.context(ctx, false)
			defer cancel()
			ctx = hctx
		}
		waits := !o.a.try && !o.done && !rn.rec.holding(o.h, false) && !rn.rec.holding(o.h, true)
		if waits {
			rn.waiting.Add(1)
		}
		re := rn.rec.current(o.h)
		ok, err := h.acquire(ctx, o.a)
		rn.checkReentry(seq, o, re, err)
		if waits {
			rn.waiting.Add(-1)
			rn.recordWait(waitRec{h: o.h, proc: proc, seq: seq, read: o.a.read, names: h.names(), n: asks(h),
				from: called, to: min(rn.rec.now(), called+ctxEnd(o)), res: outcome(ok, err)})
		}
		if !ok || err != nil {
			if re != nil && !o.a.read && err != nil {
				rn.rec.reentryFailed(re)
			}
			// A handle whose RUnlock failed still reads: its Lock is refused.
			if quiet && rn.rec.quiet >= 0 && !errors.Is(err, redcoord.ErrUpgrade) {
				rn.violate(violation{check: "liveness", name: h.names()[0], at: rn.rec.now(), seq: seq,
					msg: fmt.Sprintf("h%d's acquire after faults stopped at %.3fs failed: %s", o.h, rn.rec.quiet.Seconds(), outcome(ok, err))})
			}
			return outcome(ok, err)
		}
		hd := h.held(o.a.read)
		if rn.rec.acquired(seq, o.h, proc, o.a.read, h.names(), hd) && rn.c.context {
			cctx, cancel := h.context(context.Background(), o.a.read)
			rn.rec.watchCtx(o.h, o.a.read, cctx, cancel)
		}
		res := "ok" + tokensText(hd.tokens)
		if quiet {
			if late, bound := rn.rec.now()-rn.rec.quiet, rn.quietBound(h.names()); late > bound {
				rn.violate(violation{check: "liveness", name: h.names()[0], at: rn.rec.now(), seq: seq,
					msg: fmt.Sprintf("h%d acquired %v after faults stopped, more than %v", o.h, late, bound)})
			}
			u := rn.rec.unlockCall(o.h, o.a.read)
			rctx, rcancel := context.WithTimeout(context.Background(), leaseTTL)
			defer rcancel()
			released := outcome(true, h.release(rctx, o.a.read))
			rn.unlocked(u, seq, released)
			res += ", released: " + released
		}
		return res
	case oRelease:
		return outcome(true, h.release(ctx, o.a.read))
	case oExtend:
		res := outcome(true, h.extend(ctx, o.lease, o.a.read))
		rn.checkExtended(o.h, seq, res)
		return res
	case oForce:
		// Every call opens the window, whatever it returned: a reply may
		// be lost and the call retried (go-redis), and the retry reports
		// false or an error although the first try removed the hold.
		ok, err := h.force(ctx)
		rn.mu.Lock()
		for _, n := range h.names() {
			rn.windows = append(rn.windows, window{name: n, from: called, to: rn.rec.now(), grace: rn.maxLease(), what: "ForceUnlock"})
		}
		rn.mu.Unlock()
		return outcome(ok, err)
	case oForget:
		return outcome(true, h.forget(ctx))
	case oContext:
		cctx, cancel := h.context(context.Background(), o.a.read)
		rn.rec.watchCtx(o.h, o.a.read, cctx, cancel)
		return "ok"
	case oProclaim:
		err := h.proclaim(ctx)
		if err == nil && !rn.rec.holding(o.h, false) {
			rn.violate(violation{check: "proclaim", name: h.names()[0], at: rn.rec.now(), seq: seq,
				msg: fmt.Sprintf("h%d's Proclaim succeeded while it did not lead", o.h)})
		}
		return outcome(true, err)
	case oClose:
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		for _, c := range rn.w.procs[proc].clients {
			if e := c.Close(cctx); e != nil && err == nil {
				err = e
			}
		}
		return outcome(true, err)
	}
	return "?"
}

// unlocked records how the Unlock u of operation seq ended (res), and what
// it broke of the contract of Lost and Context (check "unlock").
func (rn *run) unlocked(u *unlock, seq int, res string) {
	if u.hr == nil {
		return
	}
	var holds func(bool) bool
	if hc, ok := rn.hs[u.hr.h].(holdCounter); ok {
		holds = hc.holds
	}
	if broke := rn.rec.unlocked(u, res, holds); broke != "" {
		rn.violate(violation{check: "unlock", name: u.hr.names[0], at: rn.rec.now(), seq: u.hr.seq,
			msg: fmt.Sprintf("%s: %s (Unlock #%d called at %.3fs)", describeHold(u.hr), broke, seq, u.at.Seconds()), a: u.hr})
	}
}
