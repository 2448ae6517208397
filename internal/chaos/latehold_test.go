package chaos

import (
	"context"
	"fmt"

	"github.com/redcoord/redcoord/internal/redistest"
)

// lateHoldGap is how long the network holds the late-hold step's acquire:
// past its fixed lease, within go-redis's read timeout.
const lateHoldGap = leaseTTL * 3 / 2

// lateHoldStep plays, now and then for rlock and MultiMutex, an acquire
// with a fixed lease whose request the network holds past that lease:
// Redis grants it when the request arrives, and the reply comes when the
// lease may have ended by the holder's clock, so the acquire fails and
// gives the hold back. h, idle and holding nothing, tries its names while
// no other handle holds, owes or waits for any of them and Redis holds
// none; once its TryLockWithLease returned, on an otherwise sound network,
// Redis must hold none of them (check "leftover"): a hold kept for nobody
// keeps everyone out for a whole lease. It reports whether it ran.
func (rn *run) lateHoldStep(h int) bool {
	switch rn.prim.(type) {
	case rlockPrim, multiPrim:
	default:
		return false
	}
	if rn.w.net == nil || !rn.wd.netOn || rn.r.IntN(12) != 0 {
		return false
	}
	pi := rn.hproc[h]
	p := rn.w.procs[pi]
	if p.closed || rn.isBusy(h) || rn.rec.holding(h, false) || rn.paused(pi) {
		return false
	}
	names := rn.hs[h].names()
	for g := range rn.hs {
		if g == h || !sharesName(rn.hs[g].names(), names) {
			continue
		}
		if rn.isBusy(g) || rn.rec.holding(g, false) || rn.rec.holding(g, true) || rn.owesRelease(g) {
			return false
		}
	}
	rn.netCalm()
	defer rn.w.net.SetDraw(rn.wd.draw)
	if held := rn.lockKeys(names); len(held) > 0 {
		return false // an orphan of an earlier acquire, left to its lease
	}
	p.faults.Disarm()
	p.faults.CloseAll()
	rn.rec.fault(pi, "break (late hold)")
	rn.settle()
	rn.w.net.ArmFor(aimAtName(pi, names[0]), redistest.NetFault{Kind: redistest.NetHold, D: lateHoldGap})
	rn.issue(opStep{kind: oAcquire, h: h, a: acq{try: true, lease: leaseTTL}, ctxDur: 3 * leaseTTL}, false)
	rn.sleep(lateHoldGap)
	rn.settle()
	if rn.isBusy(h) || rn.rec.holding(h, false) {
		return true
	}
	if held := rn.lockKeys(names); len(held) > 0 {
		rn.violate(violation{check: "leftover", name: held[0], at: rn.rec.now(), seq: rn.rec.seq,
			msg: fmt.Sprintf("h%d's TryLockWithLease, whose reply came after its lease, failed, "+
				"and Redis still holds %v for nobody", h, held)})
	}
	return true
}

// lockKeys returns the names of names whose lock key server 0 has.
func (rn *run) lockKeys(names []string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), leaseTTL)
	defer cancel()
	var held []string
	for _, n := range names {
		if k, err := rn.w.admin[0].Exists(ctx, "rc:{"+n+"}:lock").Result(); err == nil && k > 0 {
			held = append(held, n)
		}
	}
	return held
}

// sharesName reports whether a and b have a name in common.
func sharesName(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}
