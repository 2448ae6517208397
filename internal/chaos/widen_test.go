package chaos

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/redcoord/redcoord/internal/redistest"
)

// The widened mix: fault kinds and compound steps beyond the basic ones,
// each drawn only for the primitives whose failure modes it reaches.
//
//   - clock back (rlock): server 0's clock steps back and stays behind;
//     with Forget in the mix (drawn more often from then on), tokens must
//     stay above every earlier one.
//   - late messages (rfairlock, relection): a process hears pub/sub
//     messages late for a while, so a grant is in flight while others act.
//   - slow acquires (RedLock): server 0 is held by a plain Mutex of
//     another process (a RedLock's part left behind), a process's next
//     scripts, one per server, answer past the per-server budget (lease/10) but within
//     go-redis's read timeout, a Lock of that process is called at once,
//     and a TryLock of another process once the late answer is in.
//   - force after release (every primitive with ForceUnlock): an Unlock is
//     followed at once by another handle's ForceUnlock while the other
//     processes hear messages late: a grant the release sent is in flight.
//   - resign beside a wait (relection): a handle whose term was lost and
//     whose Campaign waits resigns while the current leader's Resign grants
//     to it, the grant message in flight (busyStep when the schedule gets
//     there, lostTermStep to get there).
//   - late re-entry (reentrant locks): a re-entry whose reply comes after
//     the fixed lease of the hold it re-entered ran out (lateReentryStep).
//   - wake probe (rlock): a release while a subscribed handle waits must
//     wake it at once (wakeProbeStep, wake_test.go).
//   - late copies (rrwlock, xsemaphore): a renewal, a release or a grant of
//     a handle arrives after its next hold began, whose lease is longer
//     than the TTL (longRWStep, longrw_test.go).
//   - fair queue and given-up calls (rlock, rfairlock, relection): see fairq_test.go.
//   - late acquire copies (semaphore): a TryAcquire's or a given-up
//     Acquire's copy lands once the permits are free (semCopyStep,
//     semcopy_test.go).
//   - lapsed grant (rfairlock, relection): a grant's message reaches its
//     waiter after the grant ran out and another took the name
//     (grantlapse_test.go).
//   - lost leave (rlock, rfairlock, rrwlock): the copy of an acquire given
//     up, whose leave was lost, lands in the handle's next hold
//     (lostleave_test.go).
//   - late and retried forces (rlock, rfairlock, rrwlock): a force that lands
//     after the name changed hands, a force retried after its reply was
//     lost, and a forced holder that must stop believing: see force_test.go.

const (
	fClockBack   faultKind = numFaults + iota // server 0's clock steps back
	fLateSub                                  // the process's subscribers hear messages late
	fSlowAcquire                              // the process's next scripts answer past lease/10
)

var moreFaultNames = [...]string{"clock back", "late messages", "slow acquires"}

// widening is the run's state of the widened mix.
type widening struct {
	skews     map[int]*skew                                           // clock-back offsets by server
	probes    []probe                                                 // releases of the wake-probe step (wake_test.go)
	fairq     int                                                     // steps of fairq_test.go run so far
	lapsed    bool                                                    // the lapsed grant ran (grantlapse_test.go)
	semCopy   bool                                                    // a step of semcopy_test.go ran
	lostLeave bool                                                    // the lost leave ran (lostleave_test.go)
	netOn     bool                                                    // the network faults (simnet_test.go)
	draw      func(tag int, msg bool, call string) redistest.NetFault // the network's draw function
	forceR    *rand.Rand                                              // the force steps' draws (force_test.go)

	// longest is the longest fixed lease or Extend drawn (see maxLease).
	longest time.Duration
}

func moreFaultString(f faultStep) string {
	return fmt.Sprintf("%s(%v)", moreFaultNames[f.kind-numFaults], f.d)
}

// widenFault may turn a drawn fault into one of the widened kinds the
// primitive is exposed to.
func (rn *run) widenFault(f faultStep) faultStep {
	if rn.r.IntN(4) != 0 {
		return f
	}
	switch rn.prim.(type) {
	case rlockPrim:
		return faultStep{kind: fClockBack, proc: f.proc, d: clockStep}
	case rfairlockPrim, relectionPrim:
		return faultStep{kind: fLateSub, proc: f.proc, d: pick(rn.r, maxPoll/2, leaseTTL/2)}
	case redlockPrim:
		return faultStep{kind: fSlowAcquire, proc: f.proc, d: pick(rn.r, leaseTTL/8, leaseTTL/5, leaseTTL/2)}
	}
	return f
}

// injectMore sets off a widened fault.
func (rn *run) injectMore(f faultStep) {
	p := rn.w.procs[f.proc]
	switch f.kind {
	case fClockBack:
		rn.settle()
		rn.clockBack(0)
	case fLateSub:
		p.faults.DelaySubscribers(f.d)
		rn.heals = append(rn.heals, heal{at: rn.rec.now() + 4*f.d, proc: f.proc, kind: fLateSub})
	case fSlowAcquire:
		rn.partialHold(f.proc)
		// One late reply per server: a RedLock attempt sends to every
		// server at once, and which of its scripts would take a single
		// armed delay is the scheduler's choice.
		for range p.clients {
			p.faults.DelayReply(isScript, f.d)
		}
		// An acquire of the process meets them: its attempt gives up on
		// every server and the next one is sent before the late grants come.
		// Once the late grants are in, a handle of another process tries:
		// it must find the name taken if the Lock returned.
		idle := func(g int) bool {
			return !rn.w.procs[rn.hproc[g]].closed && !rn.isBusy(g) && !rn.rec.holding(g, false)
		}
		for g := range rn.hs {
			if rn.hproc[g] == f.proc && idle(g) {
				rn.issue(opStep{kind: oAcquire, h: g, ctxDur: 3 * leaseTTL}, false)
				rn.settle()
				rn.sleep(2 * f.d)
				rn.settle()
				if c := rn.idlePeer(g, idle); c >= 0 {
					rn.issue(opStep{kind: oAcquire, h: c, a: acq{try: true}, ctxDur: 3 * leaseTTL}, false)
				}
				break
			}
		}
	}
}

// healMore ends a widened fault; it reports whether h was one.
func (rn *run) healMore(h heal) bool {
	if h.kind != fLateSub {
		return false
	}
	rn.w.procs[h.proc].faults.DelaySubscribers(0)
	rn.rec.fault(h.proc, "end of "+moreFaultNames[h.kind-numFaults])
	return true
}

// quietMore ends the widened faults when faults stop: the network sound and
// empty, clocks back in step, messages on time. It must be called with everything settled.
func (rn *run) quietMore() {
	rn.netCalm()
	rn.restoreClocks()
	for _, p := range rn.w.procs {
		p.faults.DelaySubscribers(0)
	}
}

// lateSubs makes every process but skip hear messages late for d, from now.
func (rn *run) lateSubs(skip int, d time.Duration) {
	for i, p := range rn.w.procs {
		if i == skip || p.closed {
			continue
		}
		p.faults.DelaySubscribers(d)
		rn.rec.fault(i, fmt.Sprintf("late messages(%v)", d))
		rn.heals = append(rn.heals, heal{at: rn.rec.now() + 2*d, proc: i, kind: fLateSub})
	}
	slices.SortStableFunc(rn.heals, func(a, b heal) int { return int(a.at - b.at) })
}

// issueWidened issues a drawn operation, and for a release may follow it
// with another handle's ForceUnlock while the grant is in flight.
func (rn *run) issueWidened(o opStep) {
	if rn.wakeInterlude(o.h) || rn.weakStep(o.h) {
		return
	}
	if rn.longRWStep(&o) || rn.semCopyStep(o.h) {
		return
	}
	if rn.vanishStep(o.h) || rn.lateHoldStep(o.h) || rn.abandonStep(o.h) || rn.validityStep(o.h) || rn.forceStep(o.h) {
		return
	}
	if rn.r.IntN(6) == 0 && rn.lateCopyStep(o.h) {
		return
	}
	if rn.r.IntN(8) == 0 && rn.lostTermStep(o.h) {
		return
	}
	if rn.c.reentrant && rn.r.IntN(10) == 0 && rn.lateReentryStep(o.h) {
		return
	}
	if rn.r.IntN(8) == 0 && rn.netHushed(func() bool { return rn.wakeProbeStep(o.h) }) {
		return
	}
	if rn.fairqStep(o.h) || rn.grantLapseStep(o.h) || rn.lostLeaveStep(o.h) {
		return
	}
	if len(rn.wd.skews) > 0 && rn.c.forget && o.kind == oAcquire && rn.r.IntN(4) == 0 {
		// A server's clock is behind: Forget is what may send tokens
		// backwards, so it is drawn more often.
		o = opStep{kind: oForget, h: o.h, ctxDur: 3 * leaseTTL}
	}
	if o.kind != oRelease || !rn.c.force || rn.r.IntN(3) != 0 {
		rn.issue(o, false)
		return
	}
	g := rn.idlePeer(o.h, func(int) bool { return true })
	if g < 0 {
		rn.issue(o, false)
		return
	}
	rn.lateSubs(rn.hproc[o.h], maxPoll/2)
	rn.issue(o, false)
	rn.settle()
	rn.issue(opStep{kind: oForce, h: g, ctxDur: 3 * leaseTTL}, false)
}

// idlePeer returns an idle handle of another live process that shares a
// name with h and satisfies ok, or -1.
func (rn *run) idlePeer(h int, ok func(g int) bool) int {
	var cands []int
	for g := range rn.hs {
		if rn.hproc[g] == rn.hproc[h] || rn.isBusy(g) || rn.w.procs[rn.hproc[g]].closed || !ok(g) {
			continue
		}
		if slices.ContainsFunc(rn.hs[g].names(), func(n string) bool { return slices.Contains(rn.hs[h].names(), n) }) {
			cands = append(cands, g)
		}
	}
	if len(cands) == 0 {
		return -1
	}
	return cands[rn.r.IntN(len(cands))]
}

// busyStep is drawn for a handle whose operation is in flight: for
// relection, a handle whose term was lost and whose Campaign waits may
// resign while the leader's Resign grants to it.
func (rn *run) busyStep(h int) {
	if _, ok := rn.prim.(relectionPrim); !ok || !rn.lostTerm(h) || !strings.HasPrefix(rn.rec.pending(h), "Lock") {
		return
	}
	if rn.r.IntN(2) != 0 {
		return
	}
	g := rn.idlePeer(h, func(g int) bool { return rn.rec.holding(g, false) })
	if g < 0 {
		return
	}
	rn.lateSubs(rn.hproc[g], maxPoll/2)
	rn.issue(opStep{kind: oRelease, h: g, ctxDur: leaseTTL}, false)
	rn.settle()
	rn.issueAside(opStep{kind: oRelease, h: h, ctxDur: leaseTTL})
}

// lostTerm reports whether h's last hold ended lost and it holds nothing.
func (rn *run) lostTerm(h int) bool {
	rn.rec.mu.Lock()
	defer rn.rec.mu.Unlock()
	for i := len(rn.rec.holds) - 1; i >= 0; i-- {
		if hr := rn.rec.holds[i]; hr.h == h {
			return !hr.open && hr.endHow == "lost"
		}
	}
	return false
}

// pending returns what h's last call still in flight is, or "".
func (r *recorder) pending(h int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	returned := make(map[int]bool)
	for i := len(r.events) - 1; i >= 0; i-- {
		e := r.events[i]
		if e.h != h {
			continue
		}
		switch e.kind {
		case evReturn:
			returned[e.seq] = true
		case evCall:
			if !returned[e.seq] {
				return e.what
			}
		}
	}
	return ""
}

// issueAside starts o on a handle whose operation is in flight, beside it:
// it does not mark the handle busy or idle.
func (rn *run) issueAside(o opStep) {
	proc := rn.hproc[o.h]
	what := o.String() + " beside a wait"
	seq := rn.rec.call(o.h, proc, what, rn.hs[o.h].names())
	rn.ops++
	if o.kind == oRelease {
		rn.rec.releasing(o.h, o.a.read)
	}
	ctx, cancel := opContext(o)
	rn.wg.Add(1)
	go func() {
		defer rn.wg.Done()
		defer cancel()
		rn.rec.ret(seq, o.h, proc, what, rn.exec(ctx, seq, o, false))
	}()
}
