package chaos

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/internal/scripts"
)

// Late copies for the read-write lock and the expirable semaphore: each
// step below has the network hold, or answer late, one request of one
// handle while the handle goes on (a fresh hold, a re-entry, an Extend),
// so that the late copy meets what the handle did since, and then lets
// handles of other processes try the name, which must find it taken as
// long as the handle believes it holds.
//
//   - late read renewal (rrwlock): a watchdog renewal of a read hold is
//     held while the handle releases it and takes a fresh read hold with a
//     fixed lease longer than the TTL; the renewal then arrives, and once a
//     TTL has passed a writer tries.
//   - retried RUnlock (rrwlock): a reader that re-entered its read hold
//     releases one; the release is applied, its reply lost, and go-redis
//     sends it again. The handle must go on holding the other.
//   - late write release (rrwlock): an Unlock of a write hold with a long
//     fixed lease is held past the read timeout (go-redis sends it again,
//     which releases); the handle takes a fresh
//     write hold with a long fixed lease, and a re-entry of it fails after
//     it was applied (its leave undoes it); the first Unlock then arrives,
//     and a writer tries.
//   - late renewal after Extend (xsemaphore): a watchdog renewal of a
//     permit is held while the handle extends it past the TTL; the renewal
//     then arrives, and once a TTL has passed two handles try.
//   - late grant (xsemaphore): an acquire with a fixed lease is applied at
//     once and answered after that lease ended; two handles then try.

// longRWStep may play, for the handle of o, of the read-write lock or the
// expirable semaphore, one of the steps above; it reports whether it did.
// If it did not, it may make o's fixed lease or Extend longer than the TTL
// (see longer).
func (rn *run) longRWStep(o *opStep) bool {
	h := o.h
	switch rn.prim.(type) {
	case rrwlockPrim, xsemPrim:
		rn.longer(o)
	}
	switch rn.prim.(type) {
	case rrwlockPrim:
		if rn.r.IntN(4) != 0 {
			return false
		}
		switch rn.r.IntN(3) {
		case 0:
			return rn.lateReadRenewalStep(h)
		case 1:
			return rn.retriedRUnlockStep(h)
		}
		return rn.lateUnlockStep(h)
	case xsemPrim:
		if rn.r.IntN(4) != 0 {
			return false
		}
		if rn.r.IntN(2) == 0 {
			return rn.lateExtendRenewalStep(h)
		}
		return rn.lateGrantStep(h)
	}
	return false
}

// longLease is the fixed lease and the Extend of the steps: longer than the
// TTL, so that a late copy that sets a TTL lease cuts it.
const longLease = 5 * leaseTTL / 2

// longer makes, one time in two, the fixed lease of an acquire or an
// Extend of o two to three TTLs long: the holds that a late renewal (or a
// late copy of any request that sets a TTL lease) would cut.
func (rn *run) longer(o *opStep) {
	if (o.kind != oExtend && o.a.lease == 0) || rn.r.IntN(2) != 0 {
		return
	}
	d := pick(rn.r, 2*leaseTTL, longLease, 3*leaseTTL)
	rn.wd.longest = max(rn.wd.longest, d)
	if o.kind == oExtend {
		o.lease = d
	} else {
		o.a.lease = d
	}
}

// scriptSHA returns the SHA1 of the script named name, as the network's
// draw function sees it called.
func scriptSHA(name string) string {
	for _, s := range scripts.All() {
		if s.Name() == name {
			return s.Hash()
		}
	}
	panic("chaos: no script " + name)
}

// netTarget has the network meet the next requests of process proc to
// server 0 that call the script named script with fs, one each, in order;
// every other request is drawn as before. fired reports how many of fs
// were used; done puts the schedule's draw back. On a network that never
// faults (TestReplay) nothing is targeted.
func (rn *run) netTarget(proc int, script string, fs ...redistest.NetFault) (fired func() int, done func()) {
	var n atomic.Int32
	fired = func() int { return int(n.Load()) }
	if rn.w.net == nil || !rn.wd.netOn {
		return fired, func() {}
	}
	sha, tag, inner := scriptSHA(script), proc*netServers, rn.wd.draw
	rn.w.net.SetDraw(func(t int, msg bool, call string) redistest.NetFault {
		if i := int(n.Load()); !msg && t == tag && i < len(fs) && strings.Contains(call, sha) {
			n.Add(1)
			return fs[i]
		}
		return inner(t, msg, call)
	})
	rn.rec.fault(proc, fmt.Sprintf("net: targets %s with %v", script, fs))
	return fired, func() { rn.w.net.SetDraw(rn.wd.draw) }
}

// netLate is a few nanoseconds past d, off the instants of the suite's own
// events (see netDraw).
func netLate(d time.Duration) time.Duration { return d + 7*time.Nanosecond }

// freeHandle reports whether g is a handle of a live process, idle, that
// believes it holds nothing.
func (rn *run) freeHandle(g int) bool {
	return !rn.w.procs[rn.hproc[g]].closed && !rn.isBusy(g) && !rn.rec.holding(g, false) && !rn.rec.holding(g, true)
}

// procQuiet reports whether no handle of h's process but h is busy: the
// process's next call of a script is h's.
func (rn *run) procQuiet(h int) bool {
	for g := range rn.hs {
		if g != h && rn.hproc[g] == rn.hproc[h] && rn.isBusy(g) {
			return false
		}
	}
	return true
}

// settled issues o and lets it run; it reports whether o's handle is idle
// after it.
func (rn *run) settled(o opStep) bool {
	rn.wd.longest = max(rn.wd.longest, o.a.lease, o.lease)
	rn.issue(o, false)
	rn.settle()
	return !rn.isBusy(o.h)
}

// tryOthers has up to n free handles of processes other than h's try the
// name with a TryLock (a TryAcquire), for writing.
func (rn *run) tryOthers(h, n int) {
	for g := range rn.hs {
		if n > 0 && rn.hproc[g] != rn.hproc[h] && rn.freeHandle(g) {
			rn.issue(opStep{kind: oAcquire, h: g, a: acq{try: true}, ctxDur: 3 * leaseTTL}, false)
			n--
		}
	}
}

// waitFired sleeps, in steps of a tenth of the TTL, until fired reports a
// request met, for at most a TTL; it reports whether one was.
func (rn *run) waitFired(fired func() int) bool {
	for i := 0; i < 10 && fired() == 0; i++ {
		rn.sleep(leaseTTL / 10)
	}
	return fired() > 0
}

// lateReadRenewalStep: see "late read renewal" above.
func (rn *run) lateReadRenewalStep(h int) bool {
	if !rn.freeHandle(h) {
		return false
	}
	proc := rn.hproc[h]
	rd := acq{try: true, read: true}
	if !rn.settled(opStep{kind: oAcquire, h: h, a: rd, ctxDur: 3 * leaseTTL}) || !rn.rec.holding(h, true) {
		return true
	}
	const late = leaseTTL / 2
	fired, done := rn.netTarget(proc, "rw_renew", redistest.NetFault{Kind: redistest.NetHold, D: netLate(late)})
	defer done()
	if !rn.waitFired(fired) || rn.isBusy(h) || !rn.rec.holding(h, true) {
		return true
	}
	if !rn.settled(opStep{kind: oRelease, h: h, a: rd, ctxDur: leaseTTL}) || rn.rec.holding(h, true) {
		return true
	}
	rd.lease = longLease
	if !rn.settled(opStep{kind: oAcquire, h: h, a: rd, ctxDur: 3 * leaseTTL}) || !rn.rec.holding(h, true) {
		return true
	}
	rn.sleep(late + leaseTTL + maxPoll/4)
	rn.tryOthers(h, 1)
	return true
}

// retriedRUnlockStep: see "retried RUnlock" above.
func (rn *run) retriedRUnlockStep(h int) bool {
	if !rn.freeHandle(h) {
		return false
	}
	rd := acq{try: true, read: true}
	for range 2 {
		if !rn.settled(opStep{kind: oAcquire, h: h, a: rd, ctxDur: 3 * leaseTTL}) || !rn.rec.holding(h, true) {
			return true
		}
	}
	_, done := rn.netTarget(rn.hproc[h], "rw_runlock", redistest.NetFault{Kind: redistest.NetDropAfter, D: netLate(0)})
	defer done()
	rn.settled(opStep{kind: oRelease, h: h, a: rd, ctxDur: leaseTTL})
	return true
}

// lateUnlockStep: see "late write release" above.
func (rn *run) lateUnlockStep(h int) bool {
	if !rn.freeHandle(h) {
		return false
	}
	proc := rn.hproc[h]
	// A fixed lease outlives the Unlock's first try: the watchdog stops
	// renewing a hold when its release is sent.
	if !rn.settled(opStep{kind: oAcquire, h: h, a: acq{try: true, lease: longLease}, ctxDur: 3 * leaseTTL}) ||
		!rn.rec.holding(h, false) {
		return true
	}
	const late = readTimeout + leaseTTL/2
	_, done := rn.netTarget(proc, "rw_unlock", redistest.NetFault{Kind: redistest.NetHold, D: netLate(late)})
	rn.issue(opStep{kind: oRelease, h: h, ctxDur: 3 * leaseTTL}, false)
	rn.settle()
	done()
	rn.sleep(readTimeout) // the read times out, and go-redis sends it again
	if rn.isBusy(h) || rn.rec.holding(h, false) {
		return true
	}
	if !rn.settled(opStep{kind: oAcquire, h: h, a: acq{try: true, lease: longLease}, ctxDur: 3 * leaseTTL}) ||
		!rn.rec.holding(h, false) {
		return true
	}
	// The re-entry is applied and its reply lost, and so are those of
	// every try sent again (by go-redis, then by the handle): it fails, and
	// its leave undoes it.
	drops := make([]redistest.NetFault, 8)
	for i := range drops {
		drops[i] = redistest.NetFault{Kind: redistest.NetDropAfter, D: netLate(0)}
	}
	_, done = rn.netTarget(proc, "rw_write", drops...)
	rn.issue(opStep{kind: oAcquire, h: h, a: acq{try: true}, ctxDur: leaseTTL}, false)
	rn.settle()
	rn.sleep(maxPoll)
	done()
	rn.sleep(late - readTimeout - maxPoll + maxPoll/4)
	rn.tryOthers(h, 1)
	return true
}

// lateExtendRenewalStep: see "late renewal after Extend" above.
func (rn *run) lateExtendRenewalStep(h int) bool {
	if !rn.freeHandle(h) {
		return false
	}
	if !rn.settled(opStep{kind: oAcquire, h: h, a: acq{try: true}, ctxDur: 3 * leaseTTL}) || !rn.rec.holding(h, false) {
		return true
	}
	const late = maxPoll / 2
	fired, done := rn.netTarget(rn.hproc[h], "xsem_extend", redistest.NetFault{Kind: redistest.NetHold, D: netLate(late)})
	defer done()
	if !rn.waitFired(fired) || rn.isBusy(h) || !rn.rec.holding(h, false) {
		return true
	}
	if !rn.settled(opStep{kind: oExtend, h: h, lease: longLease, ctxDur: leaseTTL}) {
		return true
	}
	rn.sleep(late + leaseTTL + maxPoll/4)
	rn.tryOthers(h, 2)
	return true
}

// lateGrantStep: see "late grant" above.
func (rn *run) lateGrantStep(h int) bool {
	if !rn.freeHandle(h) || !rn.procQuiet(h) {
		return false
	}
	// The acquire is applied at once; its reply comes after its lease
	// ended, within the read timeout.
	const lease, late = leaseTTL / 2, 3 * leaseTTL / 2
	rn.w.procs[rn.hproc[h]].faults.DelayReply(isScript, late)
	rn.rec.fault(rn.hproc[h], fmt.Sprintf("delay(%v) (grant)", late))
	rn.issue(opStep{kind: oAcquire, h: h, a: acq{try: true, lease: lease}, ctxDur: 3 * leaseTTL}, false)
	rn.settle()
	rn.sleep(late + maxPoll/4)
	rn.tryOthers(h, 2)
	return true
}

// holds reports whether the handle, by its own count, holds for reading
// (writing): whether a Context of that hold would be live.
func (h *rwHandle) holds(read bool) bool {
	ctx, cancel := h.context(context.Background(), read)
	defer cancel()
	return ctx.Err() == nil
}

// readCountBroke is what a release of a read re-entry that returned res
// broke when it left the handle holding nothing (hr is the read hold): Redis
// counted fewer re-entries than the handle, which only a release that
// failed after it was applied explains; with none, a release was applied
// twice. It returns "" for a write hold or when one failed.
func readCountBroke(hr *holdRec, res string) string {
	if !hr.read || hr.failedRel > 0 || res != "ok" {
		return ""
	}
	return fmt.Sprintf("a release of a read re-entry returned nil and ended the read hold, whose handle counted %d more "+
		"and none of whose releases failed", hr.count)
}

// maxLease is the longest lease a hold of the schedule may have had so
// far: the longest fixed lease or Extend drawn longer than the TTL (by
// longer, or a step), at least the TTL. A holder that goes away (its
// process closed, its release failed) keeps the name that long, and a
// forced holder that does not hear of it believes that long (see "Forced
// unlock" in package redcoord).
func (rn *run) maxLease() time.Duration { return max(leaseTTL, rn.wd.longest) }

// liveBound is livenessBound with the schedule's longest lease (maxLease)
// in place of the TTL.
func (rn *run) liveBound() time.Duration { return livenessBound - leaseTTL + rn.maxLease() }

// TestReadCountBroke plays read re-entries through the recorder: a release
// of one that returns nil and leaves the handle holding nothing breaks the
// contract, unless an earlier release of the hold failed (it may have been
// applied).
func TestReadCountBroke(t *testing.T) {
	r := newRecorder()
	names := []string{"n0"}
	none := func(bool) bool { return false }
	hd := hold{tokens: map[string]uint64{"n0": 1}}
	r.acquired(1, 0, 0, true, names, hd)
	r.acquired(2, 0, 0, true, names, hd) // a re-entry
	if broke := r.unlocked(r.unlockCall(0, true), "ok", none); broke == "" {
		t.Fatal("a release of a read re-entry that ended the hold broke nothing")
	}
	if r.holding(0, true) {
		t.Fatal("the belief outlived the hold the release ended")
	}

	r.acquired(3, 1, 1, true, names, hd)
	r.acquired(4, 1, 1, true, names, hd)
	r.acquired(5, 1, 1, true, names, hd)
	if broke := r.unlocked(r.unlockCall(1, true), "error: i/o timeout", nil); broke != "" {
		t.Fatalf("a failed release of a re-entry broke the contract: %s", broke)
	}
	if broke := r.unlocked(r.unlockCall(1, true), "ok", none); broke != "" {
		t.Fatalf("after a failed release, Redis may count fewer: %s", broke)
	}
	r.finish()
}
