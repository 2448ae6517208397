package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/redcoord/redcoord/internal/redistest"
)

// The RedLock validity step: an attempt whose majority answers after the
// lease, less the drift allowed, has passed must not be reported held
// (rlock.RedLock.Lock: "a majority granted it with validity left: the
// lease less the attempt's time and the clock drift allowed"). Each part
// checks only its own lease, which ends a hundredth of it early; the
// attempt must keep the drift's 2ms more.
const (
	validityLease = 40 * time.Millisecond
	// validityLate is how late every server but the first answers: within
	// each part's lease less its margin, past the attempt's validity.
	validityLate = validityLease - validityLease/100 - time.Millisecond - time.Millisecond/10
)

// validityStep plays it now and then for RedLock: h, idle and holding
// nothing, while nobody holds or waits for the name and no server has
// it, tries it with a lease of validityLease; the network holds its
// request to every server but server 0 for validityLate. A TryLock that
// returns true later than the lease less the drift after its call broke
// that rule (check "validity"). It reports whether it ran.
func (rn *run) validityStep(h int) bool {
	if _, ok := rn.prim.(redlockPrim); !ok || rn.w.net == nil || !rn.wd.netOn || rn.r.IntN(8) != 0 {
		return false
	}
	pi := rn.hproc[h]
	p := rn.w.procs[pi]
	if p.closed || rn.paused(pi) || rn.anyBusy() {
		return false
	}
	for g := range rn.hs {
		if rn.rec.holding(g, false) || rn.owesRelease(g) {
			return false
		}
	}
	rn.netCalm()
	defer rn.w.net.SetDraw(rn.wd.draw)
	if rn.anyServerHolds(rn.w.names[0]) {
		return false
	}
	p.faults.Disarm()
	p.faults.CloseAll()
	rn.rec.fault(pi, "break (validity)")
	rn.settle()
	held := make(map[int]bool)
	rn.w.net.SetDraw(func(tag int, msg bool, _ string) redistest.NetFault {
		if msg || tag/netServers != pi || tag%netServers == 0 || held[tag] {
			return redistest.NetFault{}
		}
		held[tag] = true
		return redistest.NetFault{Kind: redistest.NetHold, D: validityLate}
	})
	called := rn.rec.now()
	rn.issue(opStep{kind: oAcquire, h: h, a: acq{try: true, lease: validityLease}, ctxDur: 3 * leaseTTL}, false)
	rn.rec.mu.Lock()
	seq := rn.rec.seq
	rn.rec.mu.Unlock()
	rn.sleep(validityLease + maxPoll)
	rn.settle()
	rn.rec.mu.Lock()
	hr := rn.rec.latest[holdKey{h, false}]
	rn.rec.mu.Unlock()
	bound := validityLease - validityLease/100 - 2*time.Millisecond
	if hr != nil && hr.seq == seq && hr.start-called >= bound+100*time.Microsecond {
		rn.violate(violation{check: "validity", name: rn.w.names[0], at: hr.start, seq: seq, a: hr,
			msg: fmt.Sprintf("h%d's TryLockWithLease(%v) returned true %v after its call, past the lease less the drift (%v)",
				h, validityLease, hr.start-called, bound)})
	}
	return true
}

// anyServerHolds reports whether a server has the lock key of name.
func (rn *run) anyServerHolds(name string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), leaseTTL)
	defer cancel()
	for _, a := range rn.w.admin {
		if k, err := a.Exists(ctx, "rc:{"+name+"}:lock").Result(); err != nil || k > 0 {
			return true
		}
	}
	return false
}
