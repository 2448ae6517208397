package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/redistest"
)

// The fair queue's steps and the given-up acquires' steps of the widened
// mix, for the locks whose hold is one lock hash on one server (rlock,
// rfairlock, relection). Each sets its stage on a network emptied of what
// it held and faulting no more (hush), with the processes it uses disarmed,
// so that what it checks is owed on a sound network:
//
//   - given-up copy (all three): an acquire or a re-entry whose request
//     the network holds gives up (its context is cancelled and its
//     connections break: go-redis does not send it again) and leaves; the
//     copy lands after the leave. It must change nothing: Redis may not
//     count a re-entry the handle does not believe in (holdcount), nor
//     hold the name for a handle that gave up (leftover).
//   - dead head (rfairlock, relection): a queued waiter D is cut off past
//     its heartbeat. Either the holder releases as D's heartbeat deadline
//     passes, while a live waiter W queues behind D (W must be granted at
//     once, and D's process stays cut off a while: a probe, wake_test.go),
//     or the holder is cut off too and its lease runs out: a TryLock of W
//     must then take the name, free in Redis with only dead waiters queued.
//   - lapse under a heartbeat (rfairlock, relection): the holder is cut
//     off; the try of a waiter W just before the lease runs out gets its
//     reply late, after W's heartbeat found the name free: the heartbeat
//     hands it on, and W takes it as the reply comes.
//   - give back (rfairlock, relection): the holder's release grants to a
//     waiter D that hears the grant late and gives up at once; D's leave
//     gives the grant back and must hand the name on to the waiter W
//     behind D at once (a probe).
//   - late proclaim (relection): a Proclaim the network holds gives up;
//     its leader resigns and wins a new term, and the copy lands in that
//     term: it must not change the new term's value.

// fairqMax is how many of these steps one schedule runs at most: each
// takes up to a few seconds of the bubble's clock.
const fairqMax = 2

// fairqStep may run one of the steps above for handle h, drawn for the
// primitive; it reports whether one ran. Other primitives draw nothing.
func (rn *run) fairqStep(h int) bool {
	var fair, election bool
	switch rn.prim.(type) {
	case rlockPrim:
	case rfairlockPrim:
		fair = true
	case relectionPrim:
		fair, election = true, true
	default:
		return false
	}
	if rn.wd.fairq >= fairqMax || rn.w.net == nil || rn.r.IntN(4) != 0 {
		return false
	}
	x := rn.r.IntN(12)
	ran := false
	switch {
	case !fair || x < 2:
		ran = rn.givenUpStep(h)
	case x < 4:
		ran = rn.deadHeadStep(h, false)
	case x < 6 || (x < 7 && !election):
		ran = rn.deadHeadStep(h, true)
	case x < 8 || (x < 9 && !election):
		ran = rn.lapseBeatStep(h)
	case x < 11 && election:
		ran = rn.lateProclaimStep(h)
	default:
		ran = rn.giveBackStep(h)
	}
	if ran {
		rn.wd.fairq++
	}
	return ran
}

// hush stops the network's faults and waits until what it held has been
// delivered; the returned function lets it fault again.
func (rn *run) hush() (restore func()) {
	if !rn.wd.netOn {
		return func() {}
	}
	rn.netCalm()
	return func() { rn.w.net.SetDraw(rn.wd.draw) }
}

// steady reports whether process pi is live with no lasting fault of its
// own in effect and no reply it may still hold back; it disarms the faults
// armed for its next scripts.
func (rn *run) steady(pi int) bool {
	p := rn.w.procs[pi]
	if p.closed || slices.ContainsFunc(rn.heals, func(h heal) bool { return h.proc == pi }) {
		return false
	}
	p.faults.Disarm()
	now := rn.rec.now()
	rn.rec.mu.Lock()
	defer rn.rec.mu.Unlock()
	for _, e := range slices.Backward(rn.rec.events) {
		if e.at+readTimeout+leaseTTL+calmMargin < now {
			break
		}
		held := strings.HasPrefix(e.what, "delay(") && e.at+parenDuration(e.what)+calmMargin > now
		if e.kind == evFault && e.proc == pi && held {
			return false
		}
	}
	return true
}

// free reports whether handle g is idle and believes it holds nothing.
func (rn *run) free(g int) bool {
	return !rn.isBusy(g) && !rn.rec.holding(g, false) && !rn.rec.holding(g, true) && !rn.owesRelease(g)
}

// ownerNamer is implemented by the handles that say their owner id.
type ownerNamer interface{ owner() string }

func (h *rlockHandle) owner() string { return h.m.Owner() }
func (h *rfairHandle) owner() string { return h.m.Owner() }
func (h *rwHandle) owner() string    { return h.m.Owner() }

// heldForNobody returns the owner that Redis (server 0) holds name for, when
// it is g's (any of g's process where g does not say its owner) and no
// handle of g's process believes it holds the name or has an operation in
// flight; "" otherwise.
func (rn *run) heldForNobody(name string, g int) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	o, err := rn.w.admin[0].HGet(ctx, "rc:{"+name+"}:lock", "o").Result()
	if err != nil {
		return ""
	}
	if on, ok := rn.hs[g].(ownerNamer); (ok && o != on.owner()) || procOf(o) != rn.hproc[g] {
		return ""
	}
	for f := range rn.hs {
		if rn.hproc[f] == rn.hproc[g] && slices.Contains(rn.hs[f].names(), name) && !rn.free(f) {
			return ""
		}
	}
	return o
}

// queuedBefore reports whether a request of handle g's waits in name's
// fair queue on server 0 (rfairlock's, an election's) before g issues one:
// a wait whose leave did not land stays queued until its heartbeat lapses,
// and may be granted the name meanwhile, which is no doing of a given-up
// copy.
func (rn *run) queuedBefore(name string, g int) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	on, named := rn.hs[g].(ownerNamer)
	for _, q := range []string{"rc:{" + name + "}:queue", "rc:{" + name + "}:elect-queue"} {
		reqs, err := rn.w.admin[0].LRange(ctx, q, 0, -1).Result()
		if err != nil {
			continue
		}
		for _, req := range reqs {
			if procOf(req) == rn.hproc[g] && (!named || strings.HasPrefix(req, on.owner()+":")) {
				return true
			}
		}
	}
	return false
}

// givenUp issues o, whose first script the network holds; o's caller
// gives up, and o's process's connections break, while the copy is in
// flight (go-redis sends nothing again for a call whose context is done).
// It returns when the copy lands, and whether o's script was the one held
// (a call that waits at its handle's gate sends none: the network then
// holds nothing more).
func (rn *run) givenUp(o opStep) (lands time.Duration, ok bool) {
	const held = maxPoll * 3 / 4
	o.cancel = maxPoll / 4
	lands = rn.rec.now() + held
	pi, name := rn.hproc[o.h], rn.hs[o.h].names()[0]
	rn.rec.mu.Lock()
	from := len(rn.rec.events)
	rn.rec.mu.Unlock()
	rn.w.net.ArmFor(aimAtName(pi, name), redistest.NetFault{Kind: redistest.NetHold, D: held})
	rn.issue(o, false)
	rn.rec.mu.Lock()
	for _, e := range rn.rec.events[from:] {
		ok = ok || (e.kind == evFault && e.proc == pi && strings.Contains(e.what, " net: hold ") &&
			strings.Contains(e.what, "{"+name+"}"))
	}
	rn.rec.mu.Unlock()
	if !ok {
		rn.w.net.Calm() // drops the armed hold
		return lands, false
	}
	rn.sleepUntil(lands - held/3)
	rn.w.procs[pi].faults.CloseAll()
	rn.rec.fault(pi, "break (given up)")
	rn.settle()
	return lands, true
}

// sleepUntil moves the clock on to t, if it is ahead.
func (rn *run) sleepUntil(t time.Duration) {
	if left := t - rn.rec.now() - apart; left > 0 {
		rn.sleep(left)
	}
}

// givenUpStep plays the given-up copy for h: a re-entry if h holds, an
// acquire otherwise. It reports whether it ran.
func (rn *run) givenUpStep(h int) bool {
	pi := rn.hproc[h]
	if rn.isBusy(h) || rn.rec.holding(h, true) || (!rn.c.reentrant && rn.rec.holding(h, false)) || !rn.steady(pi) {
		return false
	}
	defer rn.hush()()
	reentry := rn.rec.holding(h, false)
	if rn.isBusy(h) || (reentry && !rn.c.reentrant) || !rn.steady(pi) {
		return true
	}
	name := rn.hs[h].names()[0]
	was, wasCount, wasFailed := rn.rec.believed(h) // the hold a re-entry is for
	// Re-entries of the hold that failed before the step may count in Redis
	// (their replies and undos lost): the handle's last release drops them.
	orphans := 0
	if was != nil {
		orphans = rn.rec.failedReentries(was)
	}
	if !reentry && (rn.heldForNobody(name, h) != "" || rn.queuedBefore(name, h)) {
		return true // a hold of h's whose Unlock failed, a wait whose leave did not land: they end by themselves
	}
	lands, ok := rn.givenUp(opStep{kind: oAcquire, h: h})
	if !ok {
		return true
	}
	rn.sleepUntil(lands + maxPoll/4)
	if rn.isBusy(h) {
		return true
	}
	if hr, count, failed := rn.rec.believed(h); reentry && hr != nil && failed == 0 && !isClosed(hr.lostCh) {
		if rc, ok := rn.hs[h].(redisCounter); ok {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			n, err := rc.redisCount(ctx)
			cancel()
			if err == nil && int(n) > count+orphans {
				rn.violate(violation{check: "holdcount", name: name, at: rn.rec.now(), seq: hr.seq,
					msg: fmt.Sprintf("Redis counts %d for h%d's hold #%d, whose handle believes in %d, "+
						"once the copy of a re-entry it gave up landed", n, h, hr.seq, count)})
			}
		}
	}
	if reentry && was != nil && isClosed(was.lostCh) && rn.lostHoldStays(name, h, was, wasCount+orphans, wasFailed) {
		return true
	}
	if o := rn.heldForNobody(name, h); o != "" {
		rn.violate(violation{check: "leftover", name: name, at: rn.rec.now(), seq: rn.rec.seq,
			msg: fmt.Sprintf("Redis holds the name for h%d (%s) once the copy of its given-up acquire landed; "+
				"no handle of process %d holds or waits", h, o, pi)})
	}
	return true
}

// lostHoldStays reports whether Redis (server 0) holds name with the hold
// was of h's, which a re-entry was for and whose Lost closed while the
// re-entry's copy was in flight: Lost closes when the hold's lease may
// have ended by the client's clock, which counts it from when its acquire
// was sent, before it can end in Redis (docs/safety.md, "Loss is
// visible"), so Redis may keep the hold a while after h's belief in it
// ended, and that is no leftover of the copy. Were the copy applied, it
// would have counted in that hold: Redis must count no more than the
// count re-entries h believed in (when no release of a re-entry failed),
// or it reports a holdcount violation.
func (rn *run) lostHoldStays(name string, h int, was *holdRec, count, failed int) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	v, err := rn.w.admin[0].HMGet(ctx, "rc:{"+name+"}:lock", "o", "t", "c").Result()
	if err != nil || len(v) != 3 || v[1] != fmt.Sprint(was.tokens[name]) {
		return false
	}
	if on, ok := rn.hs[h].(ownerNamer); ok && v[0] != on.owner() {
		return false
	}
	c, _ := v[2].(string)
	if n, err := strconv.Atoi(c); err == nil && failed == 0 && n > count {
		rn.violate(violation{check: "holdcount", name: name, at: rn.rec.now(), seq: was.seq,
			msg: fmt.Sprintf("Redis counts %d for h%d's hold #%d, found lost, whose handle believed in %d, "+
				"once the copy of a re-entry it gave up landed", n, h, was.seq, count)})
	}
	return true
}

// fairRoles picks, for w's name, a holder (one that believes it holds, or
// else a free handle) and a waiter d, with w of three distinct steady
// processes; every other handle of the name must be free. It returns -1s
// when there are none.
func (rn *run) fairRoles(w int) (holder, d int) {
	holder, d = -1, -1
	name := rn.hs[w].names()[0]
	if !rn.free(w) || !rn.steady(rn.hproc[w]) {
		return -1, -1
	}
	var cands []int
	for g := range rn.hs {
		if g == w || !slices.Contains(rn.hs[g].names(), name) {
			continue
		}
		switch {
		case rn.rec.holding(g, false) && !rn.isBusy(g) && holder < 0:
			holder = g
		case rn.free(g):
			cands = append(cands, g)
		default:
			return -1, -1
		}
	}
	if holder >= 0 && (rn.hproc[holder] == rn.hproc[w] || !rn.steady(rn.hproc[holder])) {
		return -1, -1
	}
	var hs, ds []int
	for _, g := range cands {
		switch pi := rn.hproc[g]; {
		case pi == rn.hproc[w] || rn.w.procs[pi].closed:
		case holder >= 0 && pi == rn.hproc[holder]:
		default:
			ds = append(ds, g)
			if holder < 0 {
				hs = append(hs, g)
			}
		}
	}
	if holder < 0 && len(hs) > 0 {
		holder = hs[rn.r.IntN(len(hs))]
	}
	if holder < 0 {
		return -1, -1
	}
	ds = slices.DeleteFunc(ds, func(g int) bool { return rn.hproc[g] == rn.hproc[holder] })
	if len(ds) == 0 || !rn.steady(rn.hproc[holder]) {
		return -1, -1
	}
	d = ds[rn.r.IntN(len(ds))]
	if !rn.steady(rn.hproc[d]) {
		return -1, -1
	}
	return holder, d
}

// pairRoles picks, for w's name, a holder of another steady process (one
// that believes it holds, or else a free handle); every other handle of
// the name must be free. It returns -1 when there is none.
func (rn *run) pairRoles(w int) (holder int) {
	holder = -1
	name := rn.hs[w].names()[0]
	if !rn.free(w) || !rn.steady(rn.hproc[w]) {
		return -1
	}
	var cands []int
	for g := range rn.hs {
		if g == w || !slices.Contains(rn.hs[g].names(), name) {
			continue
		}
		switch {
		case rn.rec.holding(g, false) && !rn.isBusy(g):
			if holder >= 0 {
				return -1
			}
			holder = g
		case rn.free(g):
			if rn.hproc[g] != rn.hproc[w] && !rn.w.procs[rn.hproc[g]].closed {
				cands = append(cands, g)
			}
		default:
			return -1
		}
	}
	if holder < 0 && len(cands) > 0 {
		holder = cands[rn.r.IntN(len(cands))]
	}
	if holder < 0 || rn.hproc[holder] == rn.hproc[w] || !rn.steady(rn.hproc[holder]) {
		return -1
	}
	return holder
}

// soleHold reports whether holder's Unlock would end its hold: it believes
// in one hold, counted once by it and by Redis.
func (rn *run) soleHold(holder int) bool {
	hr, count, failed := rn.rec.believed(holder)
	if hr == nil || count != 1 || failed != 0 || rn.isBusy(holder) {
		return false
	}
	rc, ok := rn.hs[holder].(redisCounter)
	if !ok {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	n, err := rc.redisCount(ctx)
	return err == nil && n == 1
}

// subscribed reports whether process pi's Hub is up.
func (rn *run) subscribed(pi int) bool {
	hb, err := rn.w.procs[pi].clients[0].Hub()
	return err == nil && hb != nil && hb.Stats().Err == nil
}

// queueUp has holder take the name if it does not hold it, then d and w
// (if w >= 0) queue behind it, in that order; it reports whether they all
// got there.
func (rn *run) queueUp(holder, d, w int, dOp opStep) bool {
	if !rn.rec.holding(holder, false) {
		rn.issue(opStep{kind: oAcquire, h: holder, a: acq{try: true}, ctxDur: 3 * leaseTTL}, false)
		rn.settle()
	}
	if !rn.rec.holding(holder, false) || rn.isBusy(holder) {
		return false
	}
	rn.issue(dOp, false)
	rn.settle()
	if !rn.isBusy(d) {
		return false
	}
	if w < 0 {
		return true
	}
	// Half a poll interval apart, w's tries do not come as d's heartbeat
	// deadline passes.
	rn.sleep(maxPoll / 2)
	rn.issue(opStep{kind: oAcquire, h: w, ctxDur: 3 * leaseTTL}, false)
	rn.settle()
	return rn.isBusy(w)
}

// cutOff stalls process pi's connections; the returned function ends it.
func (rn *run) cutOff(pi int, why string) (end func()) {
	p := rn.w.procs[pi]
	p.faults.Stall()
	rn.rec.fault(pi, "pause ("+why+")")
	return func() {
		p.faults.Unstall()
		p.faults.CloseAll()
		rn.rec.fault(pi, "end of pause ("+why+")")
		rn.settle()
	}
}

// deadHeadStep plays the dead head with w as the live waiter (lapse
// false), or as a TryLock once the holder's lease ran out (lapse true).
// It reports whether it ran.
func (rn *run) deadHeadStep(w int, lapse bool) bool {
	if holder, d := rn.fairRoles(w); holder < 0 || d < 0 {
		return false
	}
	defer rn.hush()()
	holder, d := rn.fairRoles(w)
	if holder < 0 || d < 0 || !rn.subscribed(rn.hproc[w]) {
		return true
	}
	if lapse {
		rn.lapsedHead(holder, d, w)
		return true
	}
	if !rn.queueUp(holder, d, w, opStep{kind: oAcquire, h: d, ctxDur: 3 * leaseTTL}) {
		return true
	}
	defer rn.cutOff(rn.hproc[d], "dead head")()
	// The release comes as d's heartbeat deadline passes, before a try of
	// w's drops d from the queue.
	dead, ok := rn.untilDeadline(rn.hs[d].names()[0], rn.hproc[d])
	if !ok {
		return true
	}
	rn.sleep(dead + 2*time.Millisecond)
	if !rn.soleHold(holder) || !rn.isBusy(w) {
		return true
	}
	rn.wd.probes = append(rn.wd.probes, probe{seq: rn.rec.seq + 1, waiter: w, name: rn.hs[w].names()[0]})
	rn.issue(opStep{kind: oRelease, h: holder, ctxDur: leaseTTL}, false)
	rn.sleep(maxPoll) // d stays cut off: a grant to it would stand
	return true
}

// lapsedHead plays the dead head's lapse: holder holds, d queues and is cut
// off with the holder; w queues behind d and gives up just before the
// holder's lease runs out (its heartbeat keeps the queue's keys alive);
// once both the lease and d's heartbeat ran out, w's TryLock must take the
// name, which Redis has free with only d queued, dead.
func (rn *run) lapsedHead(holder, d, w int) {
	if !rn.queueUp(holder, d, -1, opStep{kind: oAcquire, h: d, ctxDur: 3 * leaseTTL}) {
		return
	}
	name := rn.hs[w].names()[0]
	lease, ok := rn.pttl(name)
	if !ok || lease < leaseTTL/2 {
		return
	}
	rn.issue(opStep{kind: oAcquire, h: w, cancel: lease - maxPoll/4}, false)
	end := rn.rec.now() - apart + lease
	defer rn.cutOff(rn.hproc[holder], "dead head")()
	defer rn.cutOff(rn.hproc[d], "dead head")()
	if left, ok := rn.pttl(name); !ok || (rn.rec.now()+left-end).Abs() > 2*time.Millisecond || !rn.isBusy(w) {
		return // a renewal came between
	}
	dead, ok := rn.untilDeadline(name, rn.hproc[d])
	if !ok {
		return
	}
	rn.sleep(max(lease, dead) + 2*time.Millisecond)
	if rn.isBusy(w) || rn.rec.holding(holder, false) || !rn.deadOnly(name) {
		return
	}
	rn.issue(opStep{kind: oAcquire, h: w, a: acq{try: true}, ctxDur: 3 * leaseTTL}, false)
	if !rn.rec.holding(w, false) {
		rn.violate(violation{check: "liveness", name: name, at: rn.rec.now(), seq: rn.rec.seq,
			msg: fmt.Sprintf("h%d's TryLock did not take the name at once, free in Redis with only dead waiters "+
				"queued (h%d's, cut off)", w, d)})
	}
}

// pttl returns how long the lock hash of name lives on server 0.
func (rn *run) pttl(name string) (time.Duration, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	d, err := rn.w.admin[0].PTTL(ctx, "rc:{"+name+"}:lock").Result()
	return d, err == nil && d > 0
}

// untilDeadline returns how long from now the latest heartbeat deadline of
// process pi's entries in name's queue is, by server 0's clock.
func (rn *run) untilDeadline(name string, pi int) (time.Duration, bool) {
	parts := queueParts(rn.prim)
	if len(parts) == 0 {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	a := rn.w.admin[0]
	now, err := a.Time(ctx).Result()
	if err != nil {
		return 0, false
	}
	zs, err := a.ZRangeWithScores(ctx, "rc:{"+name+"}:"+parts[0], 0, -1).Result()
	if err != nil {
		return 0, false
	}
	var last int64
	for _, z := range zs {
		if procOf(fmt.Sprint(z.Member)) == pi {
			last = max(last, int64(z.Score))
		}
	}
	if last == 0 {
		return 0, false
	}
	return max(time.Duration(last-now.UnixMilli())*time.Millisecond, 0), true
}

// deadOnly reports whether Redis (server 0) has name free with entries in
// its queue, all dead.
func (rn *run) deadOnly(name string) bool {
	parts := queueParts(rn.prim)
	if len(parts) == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	a := rn.w.admin[0]
	now, err := a.Time(ctx).Result()
	if err != nil {
		return false
	}
	n, err := a.Exists(ctx, "rc:{"+name+"}:lock").Result()
	if err != nil || n != 0 {
		return false
	}
	zs, err := a.ZRangeWithScores(ctx, "rc:{"+name+"}:"+parts[0], 0, -1).Result()
	if err != nil || len(zs) == 0 {
		return false
	}
	for _, z := range zs {
		if int64(z.Score) > now.UnixMilli() {
			return false
		}
	}
	return true
}

// lapseBeatStep plays the lapse under a heartbeat with w as the waiter. It
// reports whether it ran.
func (rn *run) lapseBeatStep(w int) bool {
	if rn.pairRoles(w) < 0 {
		return false
	}
	defer rn.hush()()
	holder := rn.pairRoles(w)
	if holder < 0 || !rn.subscribed(rn.hproc[w]) {
		return true
	}
	if !rn.rec.holding(holder, false) {
		rn.issue(opStep{kind: oAcquire, h: holder, a: acq{try: true}, ctxDur: 3 * leaseTTL}, false)
		rn.settle()
	}
	if !rn.rec.holding(holder, false) || rn.isBusy(holder) {
		return true
	}
	defer rn.cutOff(rn.hproc[holder], "lapse")()
	name := rn.hs[w].names()[0]
	lease, ok := rn.pttl(name)
	const before, late = maxPoll / 2, leaseTTL / 2 // late > before + the watchdog's tick
	if !ok || lease < before+maxPoll+apart {
		return true
	}
	// w's tries come a poll interval apart from its call until the
	// holder's lease is less than one away, if nothing delays the wait:
	// the last one then comes before the lease runs out, its reply late
	// (armed once the ones before it are answered).
	end := rn.rec.now() + lease
	last := end - before
	rn.sleepUntil(last - (last-rn.rec.now())/maxPoll*maxPoll)
	rn.issue(opStep{kind: oAcquire, h: w, ctxDur: 3 * leaseTTL}, false)
	if !rn.isBusy(w) {
		return true
	}
	rn.sleepUntil(last - apart/2)
	p := rn.w.procs[rn.hproc[w]]
	delayed := p.faults.Delayed()
	// The fault takes the first script the process sends, whenever that
	// is: w's tries are a poll interval apart at most, not on a grid from
	// its call (the wait's subscription, after its first try, may take a
	// while), and another handle of the process may send a renewal first.
	// So the step records which call it held and when it was sent.
	var held struct {
		sync.Mutex
		at   time.Duration
		ours bool // a call on the name's lock: w's try or heartbeat
	}
	lock := "rc:{" + name + "}:lock"
	p.faults.DelayReply(func(args []string) bool {
		if !isScript(args) {
			return false
		}
		held.Lock()
		held.at, held.ours = rn.rec.now(), len(args) > 3 && args[3] == lock
		held.Unlock()
		return true
	}, late)
	rn.rec.fault(rn.hproc[w], fmt.Sprintf("delay(%v) (lapse)", late))
	rn.sleepUntil(end - apart/2)
	held.Lock()
	sent, ours := held.at, held.ours
	held.Unlock()
	// The call held is w's, sent while the lease stood and no earlier than
	// before ahead of its end: its reply comes after the lease ran out and
	// after w's heartbeat (one watchdog tick later at most) found the name
	// free and granted it to w.
	ranBefore := p.faults.Delayed() > delayed && ours && sent >= end-before && sent < end
	if !ranBefore {
		return true
	}
	rn.sleepUntil(sent + late + wakeBound)
	if !rn.rec.holding(w, false) && rn.isBusy(w) {
		rn.violate(violation{check: "wake", name: name, at: rn.rec.now(), seq: rn.rec.seq,
			msg: fmt.Sprintf("h%d still waits %v after its late reply came (at %.3fs); the holder's lease ran out at "+
				"%.3fs, and h%d's heartbeats since found the name free", w, wakeBound, (sent + late).Seconds(),
				end.Seconds(), w)})
	}
	return true
}

// giveBackStep plays the give back with w as the waiter behind. It
// reports whether it ran.
func (rn *run) giveBackStep(w int) bool {
	if holder, d := rn.fairRoles(w); holder < 0 || d < 0 {
		return false
	}
	defer rn.hush()()
	holder, d := rn.fairRoles(w)
	if holder < 0 || d < 0 || !rn.subscribed(rn.hproc[w]) {
		return true
	}
	// d gives up three quarters of a poll interval after its call: the
	// release comes just before, when neither d nor w has a try due.
	const patience = maxPoll * 3 / 4
	start := rn.rec.now()
	if !rn.rec.holding(holder, false) {
		start += apart // queueUp's TryLock goes first
	}
	if !rn.queueUp(holder, d, w, opStep{kind: oAcquire, h: d, cancel: patience}) {
		return true
	}
	pd := rn.hproc[d]
	rn.w.procs[pd].faults.DelaySubscribers(leaseTTL / 2)
	rn.rec.fault(pd, fmt.Sprintf("late messages(%v) (give back)", leaseTTL/2))
	rn.heals = append(rn.heals, heal{at: rn.rec.now() + leaseTTL, proc: pd, kind: fLateSub})
	slices.SortStableFunc(rn.heals, func(a, b heal) int { return int(a.at - b.at) })
	// The release lands half an apart before d gives up.
	left := start + patience - apart/2 - rn.rec.now() - apart
	if left < 0 {
		return true
	}
	rn.sleep(left)
	if !rn.soleHold(holder) || !rn.isBusy(d) || !rn.isBusy(w) {
		return true
	}
	rn.wd.probes = append(rn.wd.probes, probe{seq: rn.rec.seq + 1, waiter: w, name: rn.hs[w].names()[0]})
	rn.issue(opStep{kind: oRelease, h: holder, ctxDur: leaseTTL}, false)
	return true
}

// lateProclaimStep plays the late proclaim for h, which campaigns first if
// it does not lead; every other candidate must be idle. It reports whether
// it ran.
func (rn *run) lateProclaimStep(h int) bool {
	eh, ok := rn.hs[h].(*electionHandle)
	pi := rn.hproc[h]
	others := func() bool {
		for g := range rn.hs {
			if g != h && !rn.free(g) {
				return false // another candidate leads or would lead the next term
			}
		}
		return true
	}
	if !ok || rn.isBusy(h) || !rn.steady(pi) || !others() {
		return false
	}
	defer rn.hush()()
	if rn.isBusy(h) || !rn.steady(pi) || !others() {
		return true
	}
	if !rn.rec.holding(h, false) {
		rn.issue(opStep{kind: oAcquire, h: h, ctxDur: maxPoll}, false)
		rn.settle()
		if rn.isBusy(h) || !rn.rec.holding(h, false) {
			return true
		}
	}
	lands, ok := rn.givenUp(opStep{kind: oProclaim, h: h})
	if !ok || rn.isBusy(h) || !rn.rec.holding(h, false) || !others() {
		return true
	}
	rn.issue(opStep{kind: oRelease, h: h, ctxDur: leaseTTL}, false)
	rn.settle()
	if rn.isBusy(h) || rn.rec.holding(h, false) {
		return true
	}
	rn.issue(opStep{kind: oAcquire, h: h, ctxDur: maxPoll}, false)
	rn.settle()
	if rn.isBusy(h) || !rn.rec.holding(h, false) {
		return true
	}
	rn.sleepUntil(lands + maxPoll/4)
	if rn.isBusy(h) || !rn.rec.holding(h, false) {
		return true
	}
	hr, _, _ := rn.rec.believed(h)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l, led, err := eh.e.Leader(ctx)
	if err != nil && !errors.Is(err, redis.Nil) || !led || hr == nil || l.Term != hr.tokens[eh.name] {
		return true
	}
	if l.Value != eh.value {
		rn.violate(violation{check: "proclaim", name: eh.name, at: rn.rec.now(), seq: hr.seq,
			msg: fmt.Sprintf("h%d's term %d, in which it proclaimed nothing, has the value %q, not its Campaign's %q, "+
				"once the copy of a Proclaim of its earlier term landed", h, l.Term, l.Value, eh.value)})
	}
	return true
}
