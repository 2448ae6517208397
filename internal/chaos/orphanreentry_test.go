package chaos

import (
	"fmt"

	"github.com/redcoord/redcoord/internal/redistest"
)

// orphanReentry: h holds, and re-enters; Redis applies the re-entry, whose
// reply is lost, and its give-back is lost too, so Redis counts one hold
// more than h believes in, which nobody will release. h re-enters once
// more (the re-entry's reply carries Redis's count) and releases the two
// holds it believes in: once both Unlocks returned nil, Redis must have no
// hold of h's owner left (docs/safety.md, "Every request names its hold").
func (rn *run) orphanReentry(h int) {
	var acquire, leave string
	switch rn.hs[h].(type) {
	case *rlockHandle:
		acquire, leave = "lock_acquire", "lock_leave"
	case *rfairHandle:
		acquire, leave = "fair_acquire", "fair_leave"
	default:
		return
	}
	if !rn.take(h, 0) {
		return
	}
	proc := rn.hproc[h]
	// go-redis sends a request again when its reply was lost, and a Lock
	// tries again until its context ends: every copy's reply is lost, and
	// so is every give-back.
	for range 24 {
		rn.w.net.ArmFor(aimAt(proc, 0, scriptSHA(acquire)), redistest.NetFault{Kind: redistest.NetDropAfter})
	}
	for range 8 {
		rn.w.net.ArmFor(aimAt(proc, 0, scriptSHA(leave)), redistest.NetFault{Kind: redistest.NetDropBefore})
	}
	rn.rec.fault(proc, "re-entry applied, its reply and undo lost")
	rn.issue(opStep{kind: oAcquire, h: h, ctxDur: maxPoll / 2}, false)
	for i := 0; i < 8 && rn.isBusy(h); i++ { // until the re-entry failed, and its undo
		rn.sleep(maxPoll / 4)
	}
	rn.w.net.Disarm()
	name, hr := rn.hs[h].names()[0], rn.rec.current(h)
	if rn.isBusy(h) || hr == nil || rn.rec.countNow(hr) != 1 || rn.countOf(name, h, hr) != 2 {
		return // h lost its hold, its re-entry succeeded, or Redis has no orphan re-entry
	}
	if !rn.call(opStep{kind: oAcquire, h: h, ctxDur: leaseTTL}) || rn.rec.current(h) != hr || rn.rec.countNow(hr) != 2 {
		return
	}
	for range 2 {
		if !rn.call(opStep{kind: oRelease, h: h, ctxDur: leaseTTL}) {
			return
		}
	}
	if rn.rec.holding(h, false) {
		return // an Unlock failed
	}
	if n := rn.countOf(name, h, hr); n > 0 {
		rn.violate(violation{check: "leftover", name: name, at: rn.rec.now(), seq: rn.rec.seq,
			msg: fmt.Sprintf("h%d's two Unlocks of the two holds it believes in returned nil, and Redis still "+
				"counts %d holds of its owner (a re-entry whose reply and undo were lost)", h, n)})
	}
}

// countNow reads hr's count of holds under the recorder's lock.
func (r *recorder) countNow(hr *holdRec) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return hr.count
}
