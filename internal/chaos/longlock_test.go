package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redcoord/redcoord/internal/redistest"
)

// The late-copy steps (lateCopyStep): a request of one hold of a lock (a
// renewal, an Extend, a release) reaches Redis late, after the same handle
// took its next hold, often with a fixed lease longer than the TTL. A copy
// that wrongly reaches the fresh hold shortens its lease, or drops it, and
// a handle of another process waiting for the name gets it while the first
// still believes. Each step sets its stage from the driver's goroutine over
// several instants of the clock, as the widened steps do (steps_test.go):
//
//   - late renewal: the watchdog's renewal is copied, the copy landing
//     after an Unlock and a fresh hold with a long fixed lease;
//   - late Extend: an Extend's copy lands after an Unlock and a fresh hold;
//   - late release: within re-entries, a release's copy lands after the
//     next re-entry; Redis's hold count must not fall below the handle's;
//   - late renewal reply: a renewal applied at once, its reply late, and
//     the renewals after it lost: the lease runs from when the renewal
//     was sent, so the holder's belief ends before Redis's lease;
//   - forced, then Extend: the holder does not hear that another handle
//     forced its hold, and its Extend finds the hold gone: Lost must be
//     closed when that Extend returns;
//   - orphan left by a re-entry: the holder does not hear that its hold
//     was forced, its re-entry takes the free name as a fresh hold, every
//     reply to it lost and its undo too (an orphan of its owner that the
//     handle does not know); its Unlock names the lost hold and must leave
//     the orphan as it is;
//   - multi orphan: a MultiMutex's acquire applied with every reply lost,
//     and its undo lost too; the next acquire takes the orphans over as a
//     fresh hold, renewed from then on.

var (
	renewSHA   = scriptSHA("lock_renew")
	acquireSHA = scriptSHA("lock_acquire")
	multiSHA   = scriptSHA("lock_multi")
	leaveSHA   = scriptSHA("lock_leave")
)

// isRenewal matches a command that runs lock_renew (for redistest.Faults).
func isRenewal(args []string) bool {
	return len(args) > 1 && args[0] == "EVALSHA" && args[1] == renewSHA
}

// aimAt returns a match for redistest.Net.ArmFor: a request of process
// proc to server s that calls the script sha.
func aimAt(proc, s int, sha string) func(int, string) bool {
	tag := proc*netServers + s
	return func(t int, call string) bool { return t == tag && strings.Contains(call, sha) }
}

// aimAtName returns a match for redistest.Net.ArmFor: a request of process
// proc to server 0 whose first key is of name. A step that holds its own
// call aims so: a request the network merely holds next may be another
// process's, or the Client's background server check (its probe), which
// runs beside the step's call at an order of the scheduler's.
func aimAtName(proc int, name string) func(int, string) bool {
	tag := proc * netServers
	return func(t int, call string) bool { return t == tag && strings.Contains(call, "{"+name+"}") }
}

// lateCopyStep plays one of the late-copy steps with h, if the primitive
// has them and h is idle and holds nothing; it reports whether it ran.
func (rn *run) lateCopyStep(h int) bool {
	var variants []func(int)
	switch rn.prim.(type) {
	case rlockPrim:
		variants = []func(int){rn.lateRenewal, rn.lateRenewal, rn.lateExtend, rn.lateRelease, rn.lateRenewalReply,
			rn.forcedExtend, rn.orphanRelease, rn.orphanReentry}
	case rfairlockPrim:
		variants = []func(int){rn.lateRenewal, rn.lateRenewal, rn.lateExtend, rn.lateRelease, rn.lateRenewalReply,
			rn.forcedExtend, rn.orphanReentry}
	case multiPrim:
		variants = []func(int){rn.lateRenewal, rn.lateExtend, rn.lateRenewalReply, rn.multiOrphan, rn.multiOrphan}
	case redlockPrim:
		variants = []func(int){rn.lateRenewal, rn.lateExtend}
	default:
		return false
	}
	// Each step ends with a handle of another process waiting for the
	// name, or forcing it: one must be idle.
	if rn.w.net == nil || rn.sound || !rn.wd.netOn || !rn.idleFree(h) || rn.idlePeer(h, rn.idleFree) < 0 {
		return false
	}
	pick(rn.r, variants...)(h)
	return true
}

// idleFree reports whether h's process is live and h is idle and holds
// nothing.
func (rn *run) idleFree(h int) bool {
	return !rn.w.procs[rn.hproc[h]].closed && !rn.isBusy(h) && !rn.rec.holding(h, false) && !rn.rec.holding(h, true)
}

// take has h try the name with lease (0: renewed by the watchdog), and
// reports whether it holds and is idle.
func (rn *run) take(h int, lease time.Duration) bool {
	rn.issue(opStep{kind: oAcquire, h: h, a: acq{try: true, lease: lease}, ctxDur: 3 * leaseTTL}, false)
	rn.settle()
	rn.wd.longest = max(rn.wd.longest, lease) // see maxLease
	return rn.rec.holding(h, false) && !rn.isBusy(h)
}

// call issues o and lets it run; it reports whether o.h is idle again.
func (rn *run) call(o opStep) bool {
	rn.issue(o, false)
	rn.settle()
	return !rn.isBusy(o.h)
}

// retake has h, holding, release and take the name again with longLease;
// it reports whether h holds the fresh hold.
func (rn *run) retake(h int) bool {
	if !rn.rec.holding(h, false) || rn.isBusy(h) {
		return false
	}
	if !rn.call(opStep{kind: oRelease, h: h, ctxDur: leaseTTL}) || rn.rec.holding(h, false) {
		return false
	}
	return rn.take(h, longLease)
}

// peerWaits has an idle handle of another process that shares a name with
// h wait for the name, for two leases.
func (rn *run) peerWaits(h int) {
	if g := rn.idlePeer(h, rn.idleFree); g >= 0 {
		rn.issue(opStep{kind: oAcquire, h: g, ctxDur: 2 * leaseTTL}, false)
	}
}

// lateRenewal: h's next renewal (one per server) is copied, the copy
// landing half a lease later; meanwhile h releases and takes the name
// again with longLease. The copy names the released hold and must leave
// the fresh one alone.
func (rn *run) lateRenewal(h int) {
	if !rn.take(h, 0) {
		return
	}
	proc := rn.hproc[h]
	for s := range rn.w.opts {
		rn.w.net.ArmFor(aimAt(proc, s, renewSHA), redistest.NetFault{Kind: redistest.NetDup, D: leaseTTL / 2})
	}
	rn.rec.fault(proc, "late renewal copy")
	for i := 0; i < 8 && rn.w.net.Aimed() > 0; i++ {
		rn.sleep(maxPoll / 4)
	}
	if rn.w.net.Aimed() > 0 {
		rn.w.net.Disarm()
		return
	}
	if rn.retake(h) {
		rn.peerWaits(h)
	}
}

// lateExtend: h's Extend is copied, the copy landing a little later, after
// h released and took the name again with longLease.
func (rn *run) lateExtend(h int) {
	if !rn.take(h, pick(rn.r, 0, longLease)) {
		return
	}
	for range len(rn.hs[h].names()) * len(rn.w.opts) {
		rn.w.net.Arm(redistest.NetFault{Kind: redistest.NetDup, D: maxPoll / 2})
	}
	rn.rec.fault(rn.hproc[h], "late Extend copy")
	ok := rn.call(opStep{kind: oExtend, h: h, lease: leaseTTL / 2, ctxDur: leaseTTL})
	rn.w.net.Disarm()
	if ok && rn.retake(h) {
		rn.peerWaits(h)
	}
}

// lateRelease: h holds twice (a re-entry); the release of one is copied,
// the copy landing after h re-entered again. Redis must still count what
// h believes in.
func (rn *run) lateRelease(h int) {
	if !rn.take(h, pick(rn.r, 0, longLease)) {
		return
	}
	reenter := opStep{kind: oAcquire, h: h, a: acq{try: true}, ctxDur: 3 * leaseTTL}
	if !rn.call(reenter) {
		return
	}
	rn.w.net.Arm(redistest.NetFault{Kind: redistest.NetDup, D: maxPoll / 2})
	rn.rec.fault(rn.hproc[h], "late release copy")
	ok := rn.call(opStep{kind: oRelease, h: h, ctxDur: leaseTTL})
	rn.w.net.Disarm()
	if !ok || !rn.rec.holding(h, false) || !rn.call(reenter) {
		return
	}
	rn.sleep(maxPoll / 2)
	rn.countNow(h)
}

// countNow compares the hold count Redis keeps for h, idle and holding,
// with the re-entries h believes in: Redis may count fewer only when a
// release of a re-entry failed (it may have been applied), or none when
// the hold is gone and h has yet to learn it. It may count more while
// faults last (an undone re-entry whose undo was lost): the quiet phase
// checks that (checkCounts).
func (rn *run) countNow(h int) {
	rc, ok := rn.hs[h].(redisCounter)
	if !ok || rn.isBusy(h) {
		return
	}
	hr, count, failed := rn.rec.believed(h)
	if hr == nil || isClosed(hr.lostCh) || (hr.ctx != nil && hr.ctx.Err() != nil) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	n, err := rc.redisCount(ctx)
	if err != nil || n == 0 || int(n) >= count || failed > 0 {
		return
	}
	rn.violate(violation{check: "holdcount", name: hr.names[0], at: rn.rec.now(), seq: hr.seq,
		msg: fmt.Sprintf("Redis counts %d for h%d's hold #%d, whose handle believes in %d", n, h, hr.seq, count)})
}

// lateRenewalReply: h's next renewal is applied at once and its reply
// comes half a lease late; the renewals after it are lost on the way. Its
// lease runs from when it was sent: h's belief must end before Redis's
// lease does, when another process's waiter gets the name.
func (rn *run) lateRenewalReply(h int) {
	if !rn.take(h, 0) {
		return
	}
	proc := rn.hproc[h]
	p := rn.w.procs[proc]
	const late = leaseTTL / 2
	before := p.faults.Delayed()
	p.faults.DelayReply(isRenewal, late)
	rn.rec.fault(proc, fmt.Sprintf("delay(%v) (renewal)", late))
	for i := 0; i < 8 && p.faults.Delayed() == before; i++ {
		rn.sleep(maxPoll / 4)
	}
	if p.faults.Delayed() == before {
		p.faults.Disarm()
		return
	}
	for range 5 {
		rn.w.net.ArmFor(aimAt(proc, 0, renewSHA), redistest.NetFault{Kind: redistest.NetDropBefore, Timeout: true})
	}
	rn.rec.fault(proc, "renewals lost")
	rn.peerWaits(h)
	rn.sleep(leaseTTL + late)
	rn.w.net.Disarm()
}

// forcedExtend: another handle forces h's hold while h's process hears
// messages late, then h extends it: Extend finds the hold gone (checkExtended).
func (rn *run) forcedExtend(h int) {
	if !rn.take(h, pick(rn.r, 0, longLease)) {
		return
	}
	g := rn.idlePeer(h, rn.idleFree)
	if g < 0 {
		return
	}
	proc := rn.hproc[h]
	rn.hearLate(proc)
	if rn.call(opStep{kind: oForce, h: g, ctxDur: leaseTTL}) && rn.rec.holding(h, false) && !rn.isBusy(h) {
		rn.wd.longest = max(rn.wd.longest, longLease)
		rn.issue(opStep{kind: oExtend, h: h, lease: longLease, ctxDur: leaseTTL}, false)
	}
}

// hearLate has proc hear messages late for a while (a forced unlock's
// notice among them), from now.
func (rn *run) hearLate(proc int) {
	const d = leaseTTL / 2
	rn.w.procs[proc].faults.DelaySubscribers(d)
	rn.rec.fault(proc, fmt.Sprintf("late messages(%v) (forced)", d))
	rn.heals = append(rn.heals, heal{at: rn.rec.now() + 2*d, proc: proc, kind: fLateSub})
	slices.SortStableFunc(rn.heals, func(a, b heal) int { return int(a.at - b.at) })
}

// checkExtended: an Extend of a single lock that reports the hold lost has
// closed its Lost by the time it returns ("Loss is visible").
func (rn *run) checkExtended(h, seq int, res string) {
	switch rn.prim.(type) {
	case rlockPrim, rfairlockPrim:
	default:
		return
	}
	hr, _, _ := rn.rec.believed(h)
	if res != "lost" || hr == nil || isClosed(hr.lostCh) {
		return
	}
	rn.violate(violation{check: "unlock", name: hr.names[0], at: rn.rec.now(), seq: hr.seq,
		msg: fmt.Sprintf("%s: Extend #%d reported it lost, and its Lost is open", describeHold(hr), seq), a: hr})
}

// multiOrphan: h's next MultiMutex acquire is applied and every reply to
// it lost, and so is its undo: its names are left held by h's owner, which
// h does not know. h's next acquire takes them over, and a waiter of
// another process must not get them while h believes.
func (rn *run) multiOrphan(h int) {
	// h takes the names and lets them go, so that they are free for the
	// acquire (unless a waiter of another process takes one at once).
	if !rn.take(h, 0) || !rn.call(opStep{kind: oRelease, h: h, ctxDur: leaseTTL}) || rn.rec.holding(h, false) {
		return
	}
	proc := rn.hproc[h]
	for range 6 {
		rn.w.net.ArmFor(aimAt(proc, 0, multiSHA), redistest.NetFault{Kind: redistest.NetDropAfter})
	}
	for range 12 {
		rn.w.net.ArmFor(aimAt(proc, 0, leaveSHA), redistest.NetFault{Kind: redistest.NetDropBefore})
	}
	rn.rec.fault(proc, "acquire and undo lost")
	rn.issue(opStep{kind: oAcquire, h: h, a: acq{try: true}, ctxDur: leaseTTL}, false)
	for i := 0; i < 8 && rn.isBusy(h); i++ {
		rn.sleep(maxPoll / 4)
	}
	rn.w.net.Disarm()
	if rn.isBusy(h) || rn.rec.holding(h, false) {
		return
	}
	if rn.take(h, pick(rn.r, 0, longLease)) {
		rn.peerWaits(h)
	}
}

// holdsStill reports whether Redis (server 0) keeps the lock hash key for
// rh's owner with the token of rh's current hold.
func (rn *run) holdsStill(key string, rh *rlockHandle) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	v, err := rn.w.admin[0].HMGet(ctx, key, "o", "t").Result()
	return err == nil && len(v) == 2 && v[0] == rh.m.Owner() && v[1] == fmt.Sprint(rh.m.Token())
}

// orphanRelease: another handle forces h's hold while h's process hears
// messages late; h re-enters, and the re-entry takes the free name as a
// fresh hold, every reply to it lost and its undo too: an orphan of h's
// owner, which h does not know. h's Unlock names the lost hold: it must
// change nothing in the orphan, which the handle's next acquire takes over.
func (rn *run) orphanRelease(h int) {
	rh, ok := rn.hs[h].(*rlockHandle)
	if !ok || !rn.take(h, 0) {
		return
	}
	g := rn.idlePeer(h, rn.idleFree)
	if g < 0 {
		return
	}
	proc := rn.hproc[h]
	rn.hearLate(proc)
	if !rn.call(opStep{kind: oForce, h: g, ctxDur: leaseTTL}) || !rn.rec.holding(h, false) || rn.isBusy(h) {
		return
	}
	key := "rc:{" + rh.name + "}:lock"
	if rn.holdsStill(key, rh) {
		// The force did not end h's hold (it failed before it reached
		// Redis): the re-entry would count one more in h's live hold
		// instead of taking the free name, and with its reply and its undo
		// both lost Redis would count a re-entry h does not believe in.
		// No request reaches Redis after the leave there (the leave never
		// lands), so the late-copy rule (docs/safety.md, "Every request
		// names its hold") does not apply, and what the docs say of an
		// acquire whose reply and undo were both lost (doc.go: an orphan
		// the next acquire takes over) is about a fresh hold, which is
		// this step's case, not that one.
		return
	}
	for range 6 {
		rn.w.net.ArmFor(aimAt(proc, 0, acquireSHA), redistest.NetFault{Kind: redistest.NetDropAfter})
	}
	for range 8 {
		rn.w.net.ArmFor(aimAt(proc, 0, leaveSHA), redistest.NetFault{Kind: redistest.NetDropBefore})
	}
	rn.rec.fault(proc, "re-entry and undo lost")
	rn.issue(opStep{kind: oAcquire, h: h, a: acq{try: true}, ctxDur: leaseTTL}, false)
	for i := 0; i < 8 && (rn.isBusy(h) || rn.rec.holding(h, false)); i++ { // until h learns the loss
		rn.sleep(maxPoll / 4)
	}
	rn.w.net.Disarm()
	if rn.isBusy(h) || rn.rec.holding(h, false) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	orphan := func() string {
		v, err := rn.w.admin[0].HMGet(ctx, key, "o", "t").Result()
		if err != nil || len(v) != 2 || v[0] != rh.m.Owner() {
			return ""
		}
		t, _ := v[1].(string)
		return t
	}
	t := orphan()
	if t == "" || t == fmt.Sprint(rh.m.Token()) {
		return
	}
	rn.call(opStep{kind: oRelease, h: h, ctxDur: leaseTTL})
	if after := orphan(); after != t {
		rn.violate(violation{check: "unlock", name: rh.name, at: rn.rec.now(), seq: rn.rec.seq,
			msg: fmt.Sprintf("h%d's Unlock #%d of a lost hold changed its owner's hold of token %s, which it did not name",
				h, rn.rec.seq, t)})
	}
}
