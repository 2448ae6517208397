package chaos

import (
	"context"
	"fmt"
	"slices"
)

// The vanish step: a hold vanishes from Redis while its holder's lease is
// live, as after a failover to a replica that had not received it, or an
// operator's DEL. Nothing tells the holder but its next renewal, which
// finds the hold gone: its Lost closes and its Context ends then, and a
// handle of another process may take the name meanwhile (docs/safety.md,
// "RedLock's limits"; the same holds for one server). The step checks that
// the belief ends within vanishGrace of the hold's removal.

// vanishGrace is how long after its hold's removal a holder may go on
// believing: the next renewal (the watchdog ticks every lease/3), or the one
// after it when a renewal in flight at the removal fails, and the delay of
// its reply.
const vanishGrace = leaseTTL * 4 / 5

// vanishStep plays it, for the primitives whose holds the watchdog renews
// with the rlock renewal (rlock, MultiMutex, RedLock), now and then: h, idle
// and holding nothing, takes its name(s) on a sound network; the lock key of
// one of its names is deleted on every server at once; an idle handle of
// another process sharing the name tries it. It reports whether it ran.
func (rn *run) vanishStep(h int) bool {
	switch rn.prim.(type) {
	case rlockPrim, multiPrim, redlockPrim:
	default:
		return false
	}
	if rn.r.IntN(10) != 0 {
		return false
	}
	pi := rn.hproc[h]
	p := rn.w.procs[pi]
	if p.closed || rn.isBusy(h) || rn.rec.holding(h, false) || rn.rec.holding(h, true) || rn.paused(pi) {
		return false
	}
	names := rn.hs[h].names()
	name := names[rn.r.IntN(len(names))]
	for g := range rn.hs {
		if g != h && rn.isBusy(g) && slices.Contains(rn.hs[g].names(), name) {
			return false // a waiter would wait for a wake the removal never sends
		}
	}
	// The holder's renewals must go out and come back on time: no fault
	// of its process armed or in flight, none on the network.
	if rn.w.net != nil && rn.wd.netOn {
		rn.netCalm()
		defer rn.w.net.SetDraw(rn.wd.draw)
	}
	p.faults.Disarm()
	p.faults.CloseAll()
	rn.rec.fault(pi, "break (vanish)")
	rn.settle()
	rn.issue(opStep{kind: oAcquire, h: h, a: acq{try: true}, ctxDur: 3 * leaseTTL}, false)
	rn.settle()
	hr := rn.rec.current(h)
	if hr == nil || rn.isBusy(h) {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), leaseTTL)
	defer cancel()
	from := rn.rec.now()
	for _, a := range rn.w.admin {
		_ = a.Del(ctx, "rc:{"+name+"}:lock").Err()
	}
	rn.rec.fault(-1, fmt.Sprintf("vanish: %s's lock deleted on every server", name))
	rn.mu.Lock()
	rn.windows = append(rn.windows, window{name: name, from: from, to: from, grace: vanishGrace, what: "vanish"})
	rn.mu.Unlock()
	if _, ok := rn.prim.(multiPrim); !ok {
		idle := func(g int) bool {
			return !rn.w.procs[rn.hproc[g]].closed && !rn.isBusy(g) && !rn.rec.holding(g, false)
		}
		if g := rn.idlePeer(h, idle); g >= 0 {
			rn.issue(opStep{kind: oAcquire, h: g, a: acq{try: true}, ctxDur: 3 * leaseTTL}, false)
		}
	}
	rn.sleep(vanishGrace)
	rn.settle()
	rn.rec.mu.Lock()
	open := hr.open
	rn.rec.mu.Unlock()
	if open {
		rn.violate(violation{check: "vanish", name: name, at: rn.rec.now(), seq: hr.seq, a: hr,
			msg: fmt.Sprintf("%s still believed %v after its lock was deleted in Redis at %.3fs: "+
				"its renewals did not find it gone", describeHold(hr), vanishGrace, from.Seconds())})
	}
	return true
}

// paused reports whether process pi is cut off (a pause not yet ended).
func (rn *run) paused(pi int) bool {
	for _, hl := range rn.heals {
		if hl.proc == pi && hl.kind == fPause {
			return true
		}
	}
	return false
}

// current returns h's write hold believed in, nil if none.
func (r *recorder) current(h int) *holdRec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur[holdKey{h, false}]
}
