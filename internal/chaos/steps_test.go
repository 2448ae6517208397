package chaos

import (
	"context"
	"fmt"

	"github.com/redcoord/redcoord/rlock"
)

// The compound steps of the widened mix: each sets the stage for one way a
// primitive went wrong before, over several instants of the clock, from
// the driver's goroutine (it sleeps as a clock fault does).

// partialHold takes the RedLock's name on server 0 alone, with a fixed
// lease, through a plain Mutex of a live process other than skip: a part
// left behind, so that an attempt meets a busy server.
func (rn *run) partialHold(skip int) {
	for i, p := range rn.w.procs {
		if i == skip || p.closed {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), maxPoll)
		ok, err := rlock.New(p.clients[0], rn.w.names[0]).TryLockWithLease(ctx, leaseTTL)
		cancel()
		rn.rec.fault(i, fmt.Sprintf("part held on server 0: %s", outcome(ok, err)))
		return
	}
}

// lostTermStep plays, for relection, the way to a Resign of a lost term
// beside its handle's Campaign: h's process is cut off past its lease while
// another candidate campaigns and wins; h campaigns again and waits; the
// leader resigns, granting to h's Campaign with the message in flight, and
// h resigns meanwhile. It reports whether it ran.
func (rn *run) lostTermStep(h int) bool {
	if _, ok := rn.prim.(relectionPrim); !ok || !rn.rec.holding(h, false) || rn.isBusy(h) {
		return false
	}
	idle := func(g int) bool {
		return !rn.w.procs[rn.hproc[g]].closed && !rn.isBusy(g) && !rn.rec.holding(g, false)
	}
	g := rn.idlePeer(h, idle)
	if g < 0 {
		return false
	}
	p := rn.w.procs[rn.hproc[h]]
	p.faults.Stall()
	rn.rec.fault(rn.hproc[h], "pause (lost term)")
	rn.issue(opStep{kind: oAcquire, h: g, ctxDur: 3 * leaseTTL}, false)
	rn.settle()
	rn.sleep(leaseTTL + maxPoll)
	p.faults.Unstall()
	p.faults.CloseAll()
	rn.rec.fault(rn.hproc[h], "end of pause (lost term)")
	rn.settle()
	if rn.isBusy(h) || rn.isBusy(g) || !rn.rec.holding(g, false) {
		return true
	}
	rn.issue(opStep{kind: oAcquire, h: h, ctxDur: 3 * leaseTTL}, false)
	rn.settle()
	rn.lateSubs(rn.hproc[g], maxPoll/2)
	rn.issue(opStep{kind: oRelease, h: g, ctxDur: leaseTTL}, false)
	rn.settle()
	rn.issueAside(opStep{kind: oRelease, h: h, ctxDur: leaseTTL})
	return true
}

// lateReentryStep plays, for a reentrant lock, a re-entry answered after
// the hold it re-entered was lost: h takes the name with a fixed lease,
// re-enters just before the lease ends, and the re-entry's reply comes
// after it; a handle of another process then tries the name. It reports
// whether it ran.
func (rn *run) lateReentryStep(h int) bool {
	idle := func(g int) bool {
		return !rn.w.procs[rn.hproc[g]].closed && !rn.isBusy(g) && !rn.rec.holding(g, false) && !rn.rec.holding(g, true)
	}
	if !rn.c.reentrant || !idle(h) {
		return false
	}
	const lease, early, late = leaseTTL / 2, maxPoll / 4, maxPoll / 2
	rn.issue(opStep{kind: oAcquire, h: h, a: acq{try: true, lease: lease}, ctxDur: 3 * leaseTTL}, false)
	rn.settle()
	if !rn.rec.holding(h, false) || rn.isBusy(h) {
		return true
	}
	rn.sleep(lease - early)
	rn.healDue()
	rn.settle()
	if !rn.rec.holding(h, false) || rn.isBusy(h) {
		return true
	}
	rn.w.procs[rn.hproc[h]].faults.DelayReply(isScript, late)
	rn.rec.fault(rn.hproc[h], fmt.Sprintf("delay(%v) (re-entry)", late))
	rn.issue(opStep{kind: oAcquire, h: h, ctxDur: 3 * leaseTTL}, false)
	rn.settle()
	rn.sleep(late)
	rn.settle()
	if g := rn.idlePeer(h, idle); g >= 0 {
		rn.issue(opStep{kind: oAcquire, h: g, a: acq{try: true}, ctxDur: 3 * leaseTTL}, false)
	}
	return true
}
