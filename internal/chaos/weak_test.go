package chaos

import (
	"fmt"
	"strings"
	"sync"

	"github.com/redcoord/redcoord/internal/redistest"
)

// Two steps for what a waiter's or an orphan's leftovers do to the next
// hold:
//
//   - taken scene (rlock, rrwlock): played on a calm, as the wake
//     interlude's scenes (wakes_test.go). A holder of one process takes the
//     name with a short fixed lease; a waiter A of another process waits
//     (its Client registered), and takes the name by its poll when the
//     lease runs out, no release having woken it: the try that took it
//     must drop its Client's registration. A waiter B of another process
//     than A's then waits, and A releases: the wake must go to B, not to a
//     registration of A's that outlived its wait.
//   - orphan takeover (rrwlock): a read acquire is applied and its reply
//     lost, and its undo lost too, so that a read hold of the handle's
//     owner is left that the handle does not know (an orphan). Late in the
//     orphan's lease the handle takes a fresh read hold with a fixed lease
//     longer than the TTL, which takes the orphan over; once the orphan's
//     lease has passed, a writer of another process tries, and must find
//     the name taken as long as the handle believes it holds.

// weakStep may play, for handle h, one of the steps above; it reports
// whether it did. Each is drawn from the seed and the clock, as the wake
// interlude is: a schedule without them stays as it was.
func (rn *run) weakStep(h int) bool {
	switch rn.prim.(type) {
	case rlockPrim, rrwlockPrim:
	default:
		return false
	}
	r := newRand(rn.seed ^ uint64(rn.rec.now())*0xbf58476d1ce4e5b9)
	switch r.IntN(12) {
	case 0:
		return rn.takenScene(h)
	case 1:
		if _, ok := rn.prim.(rrwlockPrim); ok {
			return rn.orphanTakeoverStep(h)
		}
	}
	return false
}

// takenScene: see "taken scene" above.
func (rn *run) takenScene(h int) bool {
	if !rn.bubble || len(rn.wd.skews) > 0 || !rn.wakeIdle(h) {
		return false
	}
	rn.calmDown()
	if rn.w.net != nil && rn.wd.netOn {
		defer rn.w.net.SetDraw(rn.wd.draw)
	}
	rn.sleep(staleMargin)
	a := rn.wakePeer(h)
	if a < 0 || !rn.wakeIdle(h) {
		return true
	}
	const lease = leaseTTL / 2
	rn.issue(opStep{kind: oAcquire, h: h, a: acq{try: true, lease: lease}, ctxDur: 3 * leaseTTL}, false)
	rn.settle()
	if rn.isBusy(h) || !rn.rec.holding(h, false) || !rn.waitFor(a, false, opStep{}) {
		return true
	}
	rn.sleep(lease + maxPoll + quietTick) // the lease runs out: no release wakes a
	if rn.isBusy(a) || !rn.rec.holding(a, false) {
		return true
	}
	b := rn.wakePeer(a)
	if b < 0 || !rn.waitFor(b, false, opStep{}) {
		return true
	}
	rn.probeRelease(a, b)
	return true
}

// orphanTakeoverStep: see "orphan takeover" above.
func (rn *run) orphanTakeoverStep(h int) bool {
	if !rn.freeHandle(h) || !rn.procQuiet(h) || rn.w.net == nil || !rn.wd.netOn {
		return false
	}
	proc := rn.hproc[h]
	// Every copy of the acquire is applied and its reply lost (go-redis
	// sends it again, then the handle); every copy of its undo is lost.
	drop := func(n int, k redistest.NetKind) []redistest.NetFault {
		fs := make([]redistest.NetFault, n)
		for i := range fs {
			fs[i] = redistest.NetFault{Kind: k, D: netLate(0)}
		}
		return fs
	}
	done := rn.netTargets(proc, target{"rw_read", drop(8, redistest.NetDropAfter)},
		target{"rw_leave", drop(8, redistest.NetDropBefore)})
	t0 := rn.rec.now()
	rd := acq{try: true, read: true, lease: leaseTTL}
	rn.issue(opStep{kind: oAcquire, h: h, a: rd, ctxDur: leaseTTL / 4}, false)
	rn.settle()
	rn.sleep(leaseTTL / 4)
	done()
	// The orphan's lease ends a TTL after t0 at the latest.
	if rn.isBusy(h) || rn.rec.holding(h, true) || rn.rec.now()-t0 > leaseTTL/2 {
		return true
	}
	rn.sleep(3*leaseTTL/4 - (rn.rec.now() - t0))
	rd.lease = longLease
	if !rn.settled(opStep{kind: oAcquire, h: h, a: rd, ctxDur: 3 * leaseTTL}) || !rn.rec.holding(h, true) {
		return true
	}
	rn.sleep(leaseTTL/2 + quietTick)
	rn.tryOthers(h, 1)
	return true
}

// target is a script and the faults that meet its next requests, in order.
type target struct {
	script string
	fs     []redistest.NetFault
}

// netTargets is netTarget for several scripts at once: the next requests
// of process proc to server 0 that call a script of ts are met with its
// faults, one each, in order. done puts the schedule's draw back.
func (rn *run) netTargets(proc int, ts ...target) (done func()) {
	if rn.w.net == nil || !rn.wd.netOn {
		return func() {}
	}
	tag, inner := proc*netServers, rn.wd.draw
	shas := make([]string, len(ts))
	for i, t := range ts {
		shas[i] = scriptSHA(t.script)
		rn.rec.fault(proc, fmt.Sprintf("net: targets %s with %v", t.script, t.fs))
	}
	var mu sync.Mutex
	used := make([]int, len(ts))
	rn.w.net.SetDraw(func(t int, msg bool, call string) redistest.NetFault {
		if msg || t != tag {
			return inner(t, msg, call)
		}
		mu.Lock()
		for i, sha := range shas {
			if used[i] < len(ts[i].fs) && strings.Contains(call, sha) {
				used[i]++
				f := ts[i].fs[used[i]-1]
				mu.Unlock()
				return f
			}
		}
		mu.Unlock()
		return inner(t, msg, call)
	})
	return func() { rn.w.net.SetDraw(rn.wd.draw) }
}

// excusedLate reports whether b's belief, begun while an earlier hold's
// went on, is one a window allows: b's acquire was called before the
// window ended, its reply came after the window opened (Redis granted it
// before the fault, a ForceUnlock say, and told it after), and b ended by
// Lost within the window's grace, as excused allows for the earlier hold.
func excusedLate(b *holdRec, name string, ws []window) bool {
	if b.endHow != "lost" {
		return false
	}
	for _, w := range ws {
		if (w.name == "" || w.name == name) && b.called <= w.to && w.from <= b.start && b.end <= w.to+w.grace {
			return true
		}
	}
	return false
}
