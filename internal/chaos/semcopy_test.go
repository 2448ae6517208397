package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/redcoord/redcoord/internal/redistest"
)

// The Semaphore's late copies: an acquire request of a handle reaches
// Redis a second time, or late, after its caller was done with it, while
// the permits it asks for are free. A Semaphore's permits have no owner
// and no lease: a copy that takes them leaves them taken for good, and no
// handle believes it holds them. Each step runs on a network emptied of
// what it held and faulting no more (hush), with every handle of the name
// idle, and compares the permits available in Redis once the copy landed
// with those before it came:
//
//   - try copy: handles take the permits with tries until too few are left
//     for h; h's TryAcquire finds them taken, and the network delivers a
//     copy of it later (a retry whose first try was applied), after the
//     holders released. A TryAcquire that found the permits taken is over:
//     its copy takes nothing.
//   - given-up copy: h's blocking Acquire, whose request the network holds,
//     gives up (its context is cancelled and its process's connections
//     break: go-redis does not send it again) and leaves; the copy lands
//     after the leave, with the permits free. The leave refuses it.

var semAcquireSHA = scriptSHA("sem_acquire")

// semCopyStep may play one of the steps above with h; it reports whether it
// did, at most once a schedule. It draws from a source of its own, from
// the seed and the clock: the schedule's draws stay as they were.
func (rn *run) semCopyStep(h int) bool {
	if _, ok := rn.prim.(semPrim); !ok || rn.w.net == nil || !rn.wd.netOn || rn.wd.semCopy {
		return false
	}
	r := newRand(rn.seed ^ uint64(rn.rec.now())*0x9e3779b97f4a7c15 ^ 0x5e3c09)
	if r.IntN(4) != 0 || !rn.semIdle(h) || !rn.steady(rn.hproc[h]) {
		return false
	}
	rn.wd.semCopy = true
	defer rn.hush()()
	if !rn.semIdle(h) {
		return true
	}
	if r.IntN(2) == 0 {
		rn.semTryCopy(h, r.Perm(len(rn.hs)))
	} else {
		rn.semGivenUpCopy(h)
	}
	return true
}

// semIdle reports whether every handle is idle and h's process is live, and
// h believes it holds nothing.
func (rn *run) semIdle(h int) bool {
	return !rn.w.procs[rn.hproc[h]].closed && rn.free(h) && !rn.anyBusy()
}

// semAvailable reads the permits available in Redis.
func (rn *run) semAvailable() (int, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	n, err := rn.w.admin[0].HGet(ctx, "rc:{"+rn.w.names[0]+"}:permits", "a").Int()
	return n, err == nil
}

// semTryCopy plays the try copy with h; order is the order in which the
// other handles are asked to take permits.
func (rn *run) semTryCopy(h int, order []int) {
	avail, ok := rn.semAvailable()
	if !ok || avail < asks(rn.hs[h]) {
		return
	}
	var holders []int
	for _, g := range order {
		if avail < asks(rn.hs[h]) {
			break
		}
		if g == h || !rn.free(g) || rn.w.procs[rn.hproc[g]].closed || asks(rn.hs[g]) > avail ||
			!rn.steady(rn.hproc[g]) {
			continue
		}
		rn.issue(opStep{kind: oAcquire, h: g, a: acq{try: true}, ctxDur: leaseTTL}, false)
		rn.settle()
		if rn.isBusy(g) || !rn.rec.holding(g, false) {
			break
		}
		holders = append(holders, g)
		if avail, ok = rn.semAvailable(); !ok {
			break
		}
	}
	defer func() {
		for _, g := range holders {
			if !rn.isBusy(g) && rn.rec.holding(g, false) {
				rn.issue(opStep{kind: oRelease, h: g, ctxDur: leaseTTL}, false)
			}
		}
		rn.settle()
	}()
	if !ok || avail >= asks(rn.hs[h]) {
		return
	}
	const late = maxPoll / 2
	proc := rn.hproc[h]
	rn.w.net.ArmFor(aimAt(proc, 0, semAcquireSHA), redistest.NetFault{Kind: redistest.NetDup, D: late})
	rn.rec.fault(proc, fmt.Sprintf("late TryAcquire copy(%v)", late))
	sent := rn.rec.now()
	seq := rn.rec.seq + 1
	rn.issue(opStep{kind: oAcquire, h: h, a: acq{try: true}, ctxDur: leaseTTL}, false)
	rn.settle()
	if rn.w.net.Aimed() > 0 || rn.isBusy(h) || rn.rec.holding(h, false) {
		rn.w.net.Disarm()
		return
	}
	for _, g := range holders {
		if !rn.call(opStep{kind: oRelease, h: g, ctxDur: leaseTTL}) || rn.rec.holding(g, false) {
			return
		}
	}
	holders = nil
	before, ok := rn.semAvailable()
	if !ok || before < asks(rn.hs[h]) || !rn.semStill(h) {
		return
	}
	rn.sleepUntil(sent + late + maxPoll/4)
	rn.semCompare(h, seq, before, "the copy of its TryAcquire, which found the permits taken,")
}

// semGivenUpCopy plays the given-up copy with h.
func (rn *run) semGivenUpCopy(h int) {
	before, ok := rn.semAvailable()
	if !ok || before < asks(rn.hs[h]) {
		return
	}
	const held = maxPoll * 3 / 4
	proc := rn.hproc[h]
	rn.w.net.ArmFor(aimAt(proc, 0, semAcquireSHA), redistest.NetFault{Kind: redistest.NetHold, D: held})
	lands := rn.rec.now() + held
	seq := rn.rec.seq + 1
	rn.issue(opStep{kind: oAcquire, h: h, cancel: maxPoll / 4}, false)
	if rn.w.net.Aimed() > 0 {
		rn.w.net.Disarm()
		return
	}
	rn.sleepUntil(lands - held/3)
	rn.w.procs[proc].faults.CloseAll()
	rn.rec.fault(proc, "break (given up)")
	rn.settle()
	rn.sleepUntil(lands + maxPoll/4)
	if !rn.semStill(h) {
		return
	}
	rn.semCompare(h, seq, before, "the copy of its given-up Acquire")
}

// semStill reports whether no call is in flight, and h believes it holds
// nothing: the permits available change no more.
func (rn *run) semStill(h int) bool {
	return !rn.anyBusy() && !rn.rec.holding(h, false)
}

// semCompare reports a leftover when Redis has fewer permits available
// than before, once what (a copy of h's call seq) landed.
func (rn *run) semCompare(h, seq, before int, what string) {
	after, ok := rn.semAvailable()
	if !ok || after >= before {
		return
	}
	rn.violate(violation{check: "leftover", name: rn.w.names[0], at: rn.rec.now(), seq: seq,
		msg: fmt.Sprintf("available permits %d in Redis once %s landed, %d before; no handle holds or waits (h%d)",
			after, what, before, h)})
}
