package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/redcoord/redcoord/internal/redistest"
)

// The force steps (forceStep), for the primitives with ForceUnlock: h takes
// the name with a fixed lease of one TTL and g, of another process, forces
// it, on a network calmed for the step but for one fault aimed at g's
// force script (check "force"):
//
//   - late force: the script is held on the way and lands after h released
//     and took the name again. The force read the fence before the fresh
//     hold began: it must leave that hold alone, and h go on believing.
//   - retried force: the script is applied and its reply lost, so go-redis
//     sends it again. The retry must reply as the first run did: true.
//
// A force that reports true ended h's hold, and h's Client, subscribed to
// its notices and hearing messages on time, must stop believing within
// forceHeard (see "Forced unlock" in package redcoord): a round trip, not
// the hold's lease.

const (
	// lateForceGap is how long the network holds the late force's script:
	// past h's release and fresh hold, within go-redis's read timeout.
	lateForceGap = maxPoll
	// forceHeard bounds how long a forced holder hearing its notice on
	// time goes on believing after the force returned.
	forceHeard = maxPoll / 4
	// forceStream seeds the force steps' draws, a source of their own: a
	// schedule in which no force step runs draws from the schedule's
	// source as it would without them.
	forceStream = 0xf0ce
)

// forceSHA returns the force script of a primitive with ForceUnlock.
func forceSHA(p primitive) string {
	switch p.(type) {
	case rfairlockPrim:
		return scriptSHA("fair_force")
	case rrwlockPrim:
		return scriptSHA("rw_force")
	}
	return scriptSHA("lock_force")
}

// forceStep plays one of the force steps with h, now and then, if the
// primitive has ForceUnlock, h is idle and holds nothing, and no other
// handle holds, owes or waits for the name; it reports whether it ran.
func (rn *run) forceStep(h int) bool {
	switch rn.prim.(type) {
	case rlockPrim, rfairlockPrim, rrwlockPrim:
	default:
		return false
	}
	if rn.w.net == nil || rn.sound || !rn.wd.netOn {
		return false
	}
	if rn.wd.forceR == nil {
		rn.wd.forceR = rand.New(rand.NewPCG(rn.seed, forceStream))
	}
	if rn.wd.forceR.IntN(8) != 0 || !rn.idleFree(h) {
		return false
	}
	g := rn.idlePeer(h, rn.idleFree)
	if g < 0 || rn.paused(rn.hproc[h]) || rn.paused(rn.hproc[g]) {
		return false
	}
	for k := range rn.hs {
		if k != h && (rn.isBusy(k) || rn.rec.holding(k, false) || rn.rec.holding(k, true) || rn.owesRelease(k)) {
			return false
		}
	}
	late := rn.wd.forceR.IntN(2) == 0
	rn.netCalm()
	defer rn.w.net.SetDraw(rn.wd.draw)
	if !rn.take(h, leaseTTL) {
		return true
	}
	heard := rn.hearsNotices(h)
	gproc := rn.hproc[g]
	if late {
		rn.w.net.ArmFor(aimAt(gproc, 0, forceSHA(rn.prim)), redistest.NetFault{Kind: redistest.NetHold, D: lateForceGap})
		rn.rec.fault(gproc, "force held (late force)")
		rn.lateForce(h, g)
		return true
	}
	rn.w.net.ArmFor(aimAt(gproc, 0, forceSHA(rn.prim)), redistest.NetFault{Kind: redistest.NetDropAfter, D: maxPoll / 4})
	rn.rec.fault(gproc, "force reply lost (retried force)")
	rn.retriedForce(h, g, heard)
	return true
}

// retriedForce: g's force, applied while h holds, loses its reply (a
// reset) and go-redis sends it again: it must report true, and h, if it
// hears its notices on time, stop believing.
func (rn *run) retriedForce(h, g int, heard bool) {
	rn.issue(opStep{kind: oForce, h: g, ctxDur: 3 * leaseTTL}, false)
	seq := rn.rec.seq
	for i := 0; i < 20 && rn.isBusy(g); i++ { // the reset, go-redis's back-off and its retry
		rn.sleep(maxPoll / 4)
	}
	applied := rn.w.net.Aimed() == 0
	rn.w.net.Disarm()
	if rn.isBusy(g) || !applied {
		return
	}
	switch rn.rec.result(seq) {
	case "busy":
		rn.violate(violation{check: "force", name: rn.hs[h].names()[0], at: rn.rec.now(), seq: seq,
			msg: fmt.Sprintf("h%d's ForceUnlock #%d, applied while h%d held and retried, reported false", g, seq, h)})
	case "ok":
		if heard {
			rn.forcedOut(h, seq)
		}
	}
}

// lateForce: g's force, held on the way, read the fence while h held; h
// releases and takes the name again before it lands. h's fresh hold must
// outlive the force.
func (rn *run) lateForce(h, g int) {
	rn.issue(opStep{kind: oForce, h: g, ctxDur: 3 * leaseTTL}, false)
	rn.settle()
	seq := rn.rec.seq
	if rn.w.net.Aimed() > 0 { // the force failed before its script
		rn.w.net.Disarm()
		return
	}
	if !rn.call(opStep{kind: oRelease, h: h, ctxDur: leaseTTL}) || rn.rec.holding(h, false) || !rn.take(h, leaseTTL) {
		return
	}
	hr := rn.rec.current(h)
	rn.sleep(lateForceGap)
	rn.settle()
	if hr != nil && rn.lostTerm(h) {
		rn.violate(violation{check: "force", name: hr.names[0], at: rn.rec.now(), seq: seq, a: hr,
			msg: fmt.Sprintf("%s, taken after h%d's ForceUnlock #%d read the fence, was lost when the force landed",
				describeHold(hr), g, seq)})
	}
}

// forcedOut: the force #seq reported true while h held, and h hears its
// notices on time: h must stop believing within forceHeard.
func (rn *run) forcedOut(h, seq int) {
	hr := rn.rec.current(h)
	if hr == nil {
		return
	}
	rn.sleep(forceHeard)
	rn.settle()
	if rn.rec.current(h) == hr {
		rn.violate(violation{check: "force", name: hr.names[0], at: rn.rec.now(), seq: hr.seq, a: hr,
			msg: fmt.Sprintf("%s still believed %v after ForceUnlock #%d ended it, its Client listening for notices",
				describeHold(hr), forceHeard, seq)})
	}
}

// hearsNotices reports whether h's Client is subscribed to its channel of
// forced-unlock notices on server 0, and h's process hears messages on
// time (no late messages pending).
func (rn *run) hearsNotices(h int) bool {
	pi := rn.hproc[h]
	for _, hl := range rn.heals {
		if hl.proc == pi {
			return false
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), leaseTTL)
	defer cancel()
	ch := "rc:ch:" + rn.w.procs[pi].clients[0].ID()
	n, err := rn.w.admin[0].PubSubNumSub(ctx, ch).Result()
	return err == nil && n[ch] > 0
}

// result returns what operation seq returned, "" while it runs.
func (r *recorder) result(seq int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.events) - 1; i >= 0; i-- {
		if e := r.events[i]; e.seq == seq && e.kind == evReturn {
			return e.res
		}
	}
	return ""
}
