package chaos

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"time"
)

// A schedule is one run of one primitive, fully drawn from its seed: the
// driver asks the generator below for each step, in order, from one
// math/rand/v2 source, so the same seed gives the same steps as long as
// the outcomes it has seen so far are the same.

const (
	defaultSchedules = 100 // per primitive, bubble tier
	stepsPerSchedule = 30  // steps with faults; the quiet phase follows
	procsPerSchedule = 3
	handlesPerProc   = 2
)

// schedules returns how many schedules to run per primitive, and the one
// seed to replay (0: none) from REDCOORD_CHAOS_SEED.
func schedules() (n int, seed uint64, err error) {
	n = defaultSchedules
	if s := os.Getenv("REDCOORD_CHAOS_SCHEDULES"); s != "" {
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			return 0, 0, fmt.Errorf("REDCOORD_CHAOS_SCHEDULES=%q: want a positive count", s)
		}
	}
	if s := os.Getenv("REDCOORD_CHAOS_SEED"); s != "" {
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil || seed == 0 {
			return 0, 0, fmt.Errorf("REDCOORD_CHAOS_SEED=%q: want a positive integer", s)
		}
	}
	return n, seed, nil
}

// newRand is the schedule's one source of randomness.
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// pick returns one of xs.
func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

// The faults the generator draws, each against one process.
type faultKind uint8

const (
	fDelay faultKind = iota // the next script's reply is held back
	fDrop                   // the next script's reply is lost after it ran; go-redis retries
	fBreak                  // every connection of the process drops
	fDeaf                   // the subscriber connection stops delivering, for a while
	fPause                  // the process is cut off (every connection stalls), for a while
	fClock                  // the clock moves on: a long gap with nothing issued
	numFaults
)

var faultNames = [...]string{"delay", "drop", "break", "deaf", "pause", "clock"}

type faultStep struct {
	kind faultKind
	proc int
	d    time.Duration
}

func (f faultStep) String() string {
	if f.kind >= numFaults {
		return moreFaultString(f)
	}
	return fmt.Sprintf("%s(%v)", faultNames[f.kind], f.d)
}

func drawFault(r *rand.Rand, procs int) faultStep {
	f := faultStep{kind: faultKind(r.IntN(int(numFaults))), proc: r.IntN(procs)}
	switch f.kind {
	case fDelay: // within the attempt, past the lease, past the read timeout
		f.d = pick(r, leaseTTL/5, leaseTTL*3/2, readTimeout+leaseTTL/2)
	case fDeaf:
		f.d = pick(r, maxPoll, leaseTTL, 3*leaseTTL)
	case fPause:
		f.d = pick(r, leaseTTL/4, leaseTTL*3/2)
	case fClock:
		f.d = pick(r, leaseTTL/2, 2*leaseTTL)
	}
	return f
}

// The operations the generator draws, against one handle.
type opKind uint8

const (
	oAcquire opKind = iota
	oRelease
	oExtend
	oForce
	oForget
	oContext
	oProclaim
	oClose
)

type opStep struct {
	kind   opKind
	h      int
	a      acq
	ctxDur time.Duration // the call's deadline; 0: none
	cancel time.Duration // cancel the call's context this long after the call; 0: never
	done   bool          // the context is done before the call
	lease  time.Duration // Extend's lease
}

func (o opStep) String() string {
	s := [...]string{"acquire", "release", "Extend", "ForceUnlock", "Forget", "Context", "Proclaim", "Client.Close"}[o.kind]
	switch o.kind {
	case oAcquire:
		s = "Lock"
		if o.a.try {
			s = "TryLock"
		}
		if o.a.read {
			s = "R" + s
		}
		if o.a.lease > 0 {
			s += fmt.Sprintf("(lease=%v)", o.a.lease)
		}
	case oRelease:
		s = "Unlock"
		if o.a.read {
			s = "RUnlock"
		}
	case oExtend:
		s += fmt.Sprintf("(%v)", o.lease)
	}
	switch {
	case o.done:
		s += " ctx=done"
	case o.cancel > 0:
		s += fmt.Sprintf(" cancel@%v", o.cancel)
	case o.ctxDur > 0:
		s += fmt.Sprintf(" deadline=%v", o.ctxDur)
	}
	return s
}

// drawOp draws an operation for handle h, given whether it holds (for
// writing, for reading) and whether a Close may be drawn.
func drawOp(r *rand.Rand, c caps, h int, holdsW, holdsR, mayClose bool) opStep {
	o := opStep{h: h, kind: oAcquire}
	x := r.IntN(100)
	switch {
	case mayClose && !c.noClose && x < 2:
		return opStep{h: h, kind: oClose}
	case c.force && x < 6:
		o.kind = oForce
	case c.forget && x < 9:
		o.kind = oForget
	case holdsW || holdsR:
		o.a.read = holdsR && (!holdsW || r.IntN(2) == 0)
		y := r.IntN(100)
		switch {
		case y < 55:
			o.kind = oRelease
			if r.IntN(25) == 0 {
				o.done = true // an Unlock whose context is already done
			}
		case c.reentrant && y < 70:
			o.kind = oAcquire // a re-entry
		case c.lease && y < 80:
			o.kind, o.lease = oExtend, pick(r, leaseTTL/2, leaseTTL)
		case c.context && y < 90:
			o.kind = oContext
		case c.proclaim:
			o.kind = oProclaim
		default:
			o.kind = oRelease
		}
	}
	if o.kind == oAcquire {
		o.a.try = r.IntN(3) == 0
		if c.read && !holdsW && !holdsR {
			o.a.read = r.IntN(2) == 0
		}
		if c.lease && r.IntN(3) == 0 {
			o.a.lease = pick(r, leaseTTL/2, leaseTTL)
		}
	}
	switch y := r.IntN(20); {
	case y == 0:
		o.done = o.done || o.kind == oAcquire
	case y < 4:
		o.cancel = pick(r, maxPoll/2, leaseTTL)
	case o.kind == oAcquire && !o.a.try:
		o.ctxDur = pick(r, maxPoll, leaseTTL, 3*leaseTTL)
	default:
		o.ctxDur = 3 * leaseTTL
	}
	return o
}

// drawGap draws the time between two steps.
func drawGap(r *rand.Rand) time.Duration {
	return pick(r, 0, 0, 10*time.Millisecond, 50*time.Millisecond, 100*time.Millisecond, 300*time.Millisecond)
}
