package chaos

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redcoord/redcoord/internal/redistest"
)

// The lost leave (rlock, rfairlock, rrwlock's write hold): an acquire or a
// re-entry whose request the network holds gives up (its context is
// cancelled and its connections break, see givenUp), and the network loses
// its undo, the leave, every time go-redis sends it: Redis has no marker
// that the request was left. The handle then takes a fresh hold, or
// re-enters its hold again, and the held copy lands in that hold, numbered
// below the hold's last request. It must change nothing: Redis may not count
// a re-entry the handle does not believe in (holdcount), nor keep, once the
// handle's Unlock of its fresh hold returned, a hold of its owner for nobody
// (leftover). The step runs on a network emptied of what it held and
// faulting no more (hush), but for the faults it aims.

// lostLeaveStep may play the lost leave with h, once per schedule: a
// re-entry if h holds, an acquire otherwise. It reports whether it ran.
func (rn *run) lostLeaveStep(h int) bool {
	var leave string
	switch rn.prim.(type) {
	case rlockPrim:
		leave = "lock_leave"
	case rfairlockPrim:
		leave = "fair_leave"
	case rrwlockPrim:
		leave = "rw_leave"
	default:
		return false
	}
	pi := rn.hproc[h]
	if rn.wd.lostLeave || rn.w.net == nil || !rn.wd.netOn || rn.r.IntN(8) != 0 || rn.isBusy(h) ||
		rn.rec.holding(h, true) || !rn.steady(pi) {
		return false
	}
	rn.wd.lostLeave = true
	defer rn.hush()()
	if rn.isBusy(h) || !rn.steady(pi) {
		return true
	}
	name := rn.hs[h].names()[0]
	reentry := rn.rec.holding(h, false)
	if reentry {
		// The check compares counts: Redis's must be h's to begin with.
		hr, count, failed := rn.rec.believed(h)
		if hr == nil || failed > 0 || isClosed(hr.lostCh) || rn.countOf(name, h, hr) != count {
			return true
		}
	} else if !rn.othersFree(h) || len(rn.lockKeys([]string{name})) > 0 {
		return true // h's fresh hold could not take the name at once
	}
	sha := scriptSHA(leave)
	for range 8 {
		rn.w.net.ArmFor(aimAt(pi, 0, sha), redistest.NetFault{Kind: redistest.NetDropBefore})
	}
	rn.rec.fault(pi, "leaves lost (lost leave)")
	lands, ok := rn.givenUp(opStep{kind: oAcquire, h: h, a: acq{try: true}})
	rn.w.net.Disarm()
	if !ok || rn.isBusy(h) {
		return true
	}
	// The copy lands a quarter of a poll interval from now.
	if reentry {
		if !rn.call(opStep{kind: oAcquire, h: h, a: acq{try: true}, ctxDur: leaseTTL}) {
			return true
		}
	} else if !rn.take(h, 0) {
		return true
	}
	rn.sleepUntil(lands + maxPoll/4)
	if rn.isBusy(h) || !rn.rec.holding(h, false) {
		return true
	}
	hr, count, failed := rn.rec.believed(h)
	if reentry {
		if n := rn.countOf(name, h, hr); hr != nil && failed == 0 && !isClosed(hr.lostCh) && n > count {
			rn.violate(violation{check: "holdcount", name: name, at: rn.rec.now(), seq: hr.seq,
				msg: fmt.Sprintf("Redis counts %d for h%d's hold #%d, whose handle believes in %d, once the copy "+
					"of a re-entry it gave up, whose leave was lost, landed after its next re-entry", n, h, hr.seq, count)})
		}
		return true
	}
	if !rn.call(opStep{kind: oRelease, h: h, ctxDur: leaseTTL}) || rn.rec.holding(h, false) {
		return true
	}
	if o := rn.heldForNobody(name, h); o != "" {
		rn.violate(violation{check: "leftover", name: name, at: rn.rec.now(), seq: rn.rec.seq,
			msg: fmt.Sprintf("Redis holds the name for h%d (%s) once its Unlock returned: the copy of an acquire it "+
				"gave up, whose leave was lost, landed in its next hold", h, o)})
	}
	return true
}

// countOf returns the count of server 0's lock hash of name when it is
// hr's, h's write hold (its owner's, with its token), or -1.
func (rn *run) countOf(name string, h int, hr *holdRec) int {
	on, ok := rn.hs[h].(ownerNamer)
	if !ok || hr == nil {
		return -1
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	v, err := rn.w.admin[0].HMGet(ctx, "rc:{"+name+"}:lock", "o", "t", "c").Result()
	if err != nil || len(v) != 3 || v[0] != on.owner() || v[1] != fmt.Sprint(hr.tokens[name]) {
		return -1
	}
	c, _ := v[2].(string)
	n, err := strconv.Atoi(c)
	if err != nil {
		return -1
	}
	return n
}

// othersFree reports whether every other handle that shares a name with h
// is free (see free).
func (rn *run) othersFree(h int) bool {
	for g := range rn.hs {
		if g != h && sharesName(rn.hs[g].names(), rn.hs[h].names()) && !rn.free(g) {
			return false
		}
	}
	return true
}
