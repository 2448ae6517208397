package chaos

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redcoord/redcoord/internal/redistest"
)

// The wake interlude (rlock, rrwlock, xsemaphore): faults stop for a
// while, long enough for what they left behind (a registration or a
// waiting writer whose leave was lost, a hold whose release failed) to run
// out, and a scene of releases and waits is played on the calm: each
// release that frees the name while a live, subscribed handle of a process
// whose Hub can subscribe waits for it must be followed at once (within
// wakeBound) by a hold of the name. In the bubble a delivered wake costs no
// time on the clock; one spent on a registration that outlived its wait,
// or never sent, costs the waiter its poll interval, which the stranded-
// waiter check allows. Outside such a stretch wake-ups are noisy (see
// wake_test.go). The scenes:
//
//   - release: holders take every permit (the name), a waiter of another
//     process waits, a holder releases (for rrwlock a write hold, the
//     waiter a reader or a writer).
//   - leave: as release, but first a waiter of another process than the
//     one to wake waits and gives up (its context ends), its Client's last
//     waiter: its leave takes its registration (its waiting writer) away,
//     and the release's wake goes to the waiter that stayed.
//   - join: two waiters of one process; the first's try, woken by the
//     release, is answered late, and the second joins its Client's waits
//     meanwhile, without a try of its own: the try that took the lock
//     dropped the Client's registration, so the first wakes the second,
//     whose try registers the Client again; the first then releases.
//   - drop gap: two waiters of one process; the second gives up while the
//     first's woken try (which kept the Client's registration for it) is
//     answered late; the first's end then drops the registration, a
//     request the network holds, and the second waits again meanwhile: its
//     try must follow the drop. The first then releases.
//   - lapse (rlock): a waiter of another process waits throughout; a
//     waiter gives up and its leave is lost (the network drops it), so its
//     Client's registration stays, unrenewed; a renewal of it sent before,
//     which the network held, arrives after it lapsed, and must find it
//     gone, not renew it: the release then wakes the waiter that stayed.
//
// The locks play the first four (rrwlock's writers for join and drop gap,
// whose registration is per Client), rlock all five; the semaphore the
// first two.

// wakeScenes lists the scenes a primitive plays, by number (0 release, 1
// leave, 2 join, 3 drop gap, 4 lapse), each as often as it is drawn: the
// scenes that set the stage for a rarer failure, more often.
func wakeScenes(p primitive) []int {
	switch p.(type) {
	case rlockPrim:
		return []int{0, 1, 1, 2, 3, 3, 4, 4}
	case rrwlockPrim:
		return []int{0, 1, 1, 2, 3}
	case xsemPrim:
		return []int{0, 1}
	}
	return nil
}

// wakeInterlude is drawn for a drawn operation of handle h; it reports
// whether it ran (the operation is then not issued).
func (rn *run) wakeInterlude(h int) bool {
	scenes := wakeScenes(rn.prim)
	if len(scenes) == 0 || !rn.bubble || len(rn.wd.skews) > 0 || !rn.wakeIdle(h) {
		return false
	}
	// Its own draw, from the seed and the clock: a schedule
	// without an interlude stays as it was.
	r := newRand(rn.seed ^ uint64(rn.rec.now())*0x9e3779b97f4a7c15)
	if r.IntN(7) != 0 {
		return false
	}
	scene := scenes[r.IntN(len(scenes))]
	rn.calmDown()
	if rn.w.net != nil && rn.wd.netOn {
		defer rn.w.net.SetDraw(rn.wd.draw)
	}
	rn.sleep(staleMargin)
	switch scene {
	case 0, 1:
		rn.releaseScene(h, scene == 1)
	case 2:
		rn.joinScene(h)
	case 3:
		rn.dropGapScene(h)
	case 4:
		rn.lapseScene(h)
	}
	return true
}

// staleMargin is how long the interlude waits, calm, before its scene:
// what a fault left behind lives a lease at most, a failed try backs off
// a poll interval at most.
const staleMargin = leaseTTL + maxPoll

// calmDown ends every fault, as the quiet phase does: the network sound and
// empty (until the interlude ends), messages on time, every process healed.
// A server's clock that stepped back stays behind (its registrations'
// deadlines run ahead of it): the interlude is not played after one.
func (rn *run) calmDown() {
	rn.settle()
	rn.netCalm()
	for i, p := range rn.w.procs {
		if !p.closed {
			p.faults.DelaySubscribers(0)
			p.heal()
			rn.rec.fault(i, "heal all")
		}
	}
	rn.heals = nil
	rn.settle()
}

// wakeIdle reports whether h may act in a scene: its process is live, it
// is idle and holds nothing.
func (rn *run) wakeIdle(h int) bool {
	return !rn.w.procs[rn.hproc[h]].closed && !rn.isBusy(h) && !rn.rec.holding(h, false) && !rn.rec.holding(h, true)
}

// hubsOK reports whether every live process's Hub can subscribe: a Hub
// that failed to confirm a subscription lets waits poll for a while, and a
// registration of a process that cannot hear spends a release's wake.
func (rn *run) hubsOK() bool {
	for _, p := range rn.w.procs {
		if p.closed {
			continue
		}
		hb, err := p.clients[0].Hub()
		if err != nil || hb == nil || hb.Stats().Err != nil {
			return false
		}
	}
	return true
}

// wakePeer returns an idle handle of a live process not in skip that
// shares h's name, or -1.
func (rn *run) wakePeer(h int, skip ...int) int {
	return rn.idlePeer(h, func(g int) bool { return rn.wakeIdle(g) && !slices.Contains(skip, rn.hproc[g]) })
}

// wakePair returns two idle handles a, b of one live process that share a
// name, and an idle handle of another live process on that name to hold
// it: h when it can, or -1s when there are none.
func (rn *run) wakePair(h int) (holder, a, b int) {
	if a = rn.pairPeer(h); a >= 0 {
		return h, a, rn.sameProcPeer(a)
	}
	var cands []int
	for g := range rn.hs {
		if rn.wakeIdle(g) && rn.pairPeer(g) >= 0 {
			cands = append(cands, g)
		}
	}
	if len(cands) == 0 {
		return -1, -1, -1
	}
	holder = cands[rn.r.IntN(len(cands))]
	a = rn.pairPeer(holder)
	return holder, a, rn.sameProcPeer(a)
}

// pairPeer returns an idle handle of a live process other than h's that
// shares h's name and has an idle handle of its own process beside it
// (sameProcPeer), or -1.
func (rn *run) pairPeer(h int) int {
	return rn.idlePeer(h, func(g int) bool { return rn.wakeIdle(g) && rn.sameProcPeer(g) >= 0 })
}

// sameProcPeer returns another idle handle of h's process that shares h's
// name, or -1.
func (rn *run) sameProcPeer(h int) int {
	for g := range rn.hs {
		if g != h && rn.hproc[g] == rn.hproc[h] && rn.wakeIdle(g) && slices.Equal(rn.hs[g].names(), rn.hs[h].names()) {
			return g
		}
	}
	return -1
}

// takeAll has h, and for a semaphore another idle handle, take the name
// (every permit) with a try, for writing; it returns the holders, or nil
// when one was refused.
func (rn *run) takeAll(h int) []int {
	holders := []int{h}
	if rn.c.capacity > 1 {
		g := rn.wakePeer(h)
		if g < 0 {
			return nil
		}
		holders = append(holders, g)
	}
	for _, g := range holders {
		rn.issue(opStep{kind: oAcquire, h: g, a: acq{try: true}, ctxDur: 3 * leaseTTL}, false)
		rn.settle()
		if rn.isBusy(g) || !rn.rec.holding(g, false) {
			return nil
		}
	}
	return holders
}

// waitFor has g wait for its name (a blocking acquire, read or write) and
// reports whether it waits.
func (rn *run) waitFor(g int, read bool, o opStep) bool {
	o.kind, o.h, o.a = oAcquire, g, acq{read: read}
	if o.cancel == 0 {
		o.ctxDur = 3 * leaseTTL
	}
	rn.issue(o, false)
	rn.settle()
	return rn.isBusy(g)
}

// probeRelease releases h's write hold; when waiter still waits and every
// Hub can subscribe, the release is a probe: someone must take the name at
// once.
func (rn *run) probeRelease(h, waiter int) {
	if rn.isBusy(waiter) && rn.hubsOK() {
		rn.wd.probes = append(rn.wd.probes, probe{seq: rn.rec.seq + 1, waiter: waiter, name: rn.hs[h].names()[0]})
	}
	rn.issue(opStep{kind: oRelease, h: h, ctxDur: leaseTTL}, false)
	rn.settle()
}

// releaseScene plays the release scene, with a waiter that gives up first
// when leave is set. The waiter to wake is of another process than the
// releaser's, which hands on to its own waiters without a wake; the one
// that gives up, of another process than that waiter's (the releaser's
// will do: its Client's registration would take the wake as well).
func (rn *run) releaseScene(h int, leave bool) {
	holders := rn.takeAll(h)
	if holders == nil {
		return
	}
	b := rn.wakePeer(h)
	if b < 0 {
		return
	}
	if leave {
		a := rn.idlePeer(b, func(g int) bool { return rn.wakeIdle(g) && slices.Equal(rn.hs[g].names(), rn.hs[h].names()) })
		if a < 0 || !rn.waitFor(a, false, opStep{cancel: maxPoll / 2}) {
			return
		}
		rn.sleep(maxPoll/2 + quietTick)
		if rn.isBusy(a) || rn.rec.holding(a, false) {
			return
		}
	}
	// After a writer left, a reader: a waiting writer left behind would
	// hold readers back.
	if !rn.waitFor(b, rn.c.read && (leave || rn.r.IntN(2) == 0), opStep{}) {
		return
	}
	rn.probeRelease(h, b)
}

// joinScene plays the join scene.
func (rn *run) joinScene(h int) {
	h, a, b := rn.wakePair(h)
	if a < 0 {
		return
	}
	if rn.takeAll(h) == nil || !rn.waitFor(a, false, opStep{}) {
		return
	}
	const late = maxPoll / 4
	p := rn.hproc[a]
	rn.w.procs[p].faults.DelayReply(isScript, late)
	rn.rec.fault(p, fmt.Sprintf("delay(%v) (wake interlude)", late))
	rn.issue(opStep{kind: oRelease, h: h, ctxDur: leaseTTL}, false)
	rn.settle()
	if !rn.waitFor(b, false, opStep{}) {
		return
	}
	rn.sleep(late + quietTick)
	if rn.isBusy(a) || !rn.rec.holding(a, false) {
		return
	}
	rn.probeRelease(a, b)
}

// dropGapScene plays the drop gap scene.
func (rn *run) dropGapScene(h int) {
	h, a, b := rn.wakePair(h)
	if a < 0 {
		return
	}
	if rn.takeAll(h) == nil || !rn.waitFor(a, false, opStep{}) {
		return
	}
	const late, gone, held = maxPoll / 4, maxPoll / 20, maxPoll / 2
	if !rn.waitFor(b, false, opStep{cancel: gone}) {
		return
	}
	p := rn.hproc[a]
	rn.w.procs[p].faults.DelayReply(isScript, late)
	rn.rec.fault(p, fmt.Sprintf("delay(%v) (wake interlude)", late))
	rn.issue(opStep{kind: oRelease, h: h, ctxDur: leaseTTL}, false)
	rn.settle()
	rn.sleep(2 * gone)
	if rn.isBusy(b) || rn.w.net == nil {
		return
	}
	// b left, keeping the registration for a; a's try, answered next, kept
	// it too, and a's end drops it: the network holds that drop.
	rn.w.net.SetDraw(holdOne(p*netServers, leaveScript(rn.prim), held))
	rn.sleep(late)
	// b waits again while the drop is held: its try, if it went before
	// the drop, is answered after it, so that a's end finds b not counted
	// among the Client's waiters, and wakes nobody.
	rn.w.procs[p].faults.DelayReply(isScript, held)
	rn.rec.fault(p, fmt.Sprintf("delay(%v) (wake interlude)", held))
	if !rn.waitFor(b, false, opStep{}) {
		return
	}
	rn.sleep(2 * held)
	rn.w.net.SetDraw(nil)
	rn.settle()
	if rn.isBusy(a) || !rn.rec.holding(a, false) {
		return
	}
	rn.probeRelease(a, b)
}

// lapseScene plays the lapse scene.
func (rn *run) lapseScene(h int) {
	// b is of another process than h's: a release hands on to a waiter of
	// its own process without a wake.
	b := rn.wakePeer(h)
	if b < 0 || rn.w.net == nil {
		return
	}
	a := rn.idlePeer(b, func(g int) bool {
		return g != h && rn.wakeIdle(g) && slices.Equal(rn.hs[g].names(), rn.hs[h].names())
	})
	if a < 0 {
		return
	}
	// h holds with a fixed lease, which no renewal of its process's (held
	// with a's) needs to keep. b waits throughout: its registration keeps
	// the registry (and a's lapsed registration in it) from expiring.
	rn.issue(opStep{kind: oAcquire, h: h, a: acq{try: true, lease: 3 * leaseTTL}, ctxDur: 3 * leaseTTL}, false)
	rn.settle()
	if rn.isBusy(h) || !rn.rec.holding(h, false) || !rn.waitFor(b, false, opStep{}) {
		return
	}
	// A renewal is sent a third of the lease after a's registration: the
	// network holds it past the registration's deadline. The release
	// comes after b's next try renewed its registration: a revived
	// registration of a's, due first, would take the wake.
	const gone, held = leaseTTL/3 + quietTick, leaseTTL * 3 / 2
	p := rn.hproc[a]
	rn.w.net.SetDraw(lapseDraw(p*netServers, scriptSHA("lock_beat"), scriptSHA("lock_leave"), held))
	defer rn.w.net.SetDraw(nil)
	if !rn.waitFor(a, false, opStep{cancel: gone}) {
		return
	}
	rn.sleep(gone + held + maxPoll)
	if rn.isBusy(a) {
		return
	}
	rn.probeRelease(h, b)
}

// lapseDraw is a draw of the network that holds, for d, the first request
// on connection tag that calls the script beat, and drops every one there
// that calls leave before the server.
func lapseDraw(tag int, beat, leave string, d time.Duration) func(int, bool, string) redistest.NetFault {
	held := false
	return func(t int, msg bool, call string) redistest.NetFault {
		switch {
		case msg || t != tag:
		case strings.Contains(call, leave):
			return redistest.NetFault{Kind: redistest.NetDropBefore, D: time.Millisecond}
		case !held && strings.Contains(call, beat):
			held = true
			return redistest.NetFault{Kind: redistest.NetHold, D: d + 7*time.Nanosecond}
		}
		return redistest.NetFault{}
	}
}

// leaveScript is the SHA1 of the script by which a lock waiter's Client
// drops its registration.
func leaveScript(p primitive) string {
	if _, ok := p.(rrwlockPrim); ok {
		return scriptSHA("rw_leave")
	}
	return scriptSHA("lock_leave")
}

// holdOne is a draw of the network that holds, for d, the first request on
// connection tag that calls the script sha, and passes everything else.
func holdOne(tag int, sha string, d time.Duration) func(int, bool, string) redistest.NetFault {
	done := false
	return func(t int, msg bool, call string) redistest.NetFault {
		if done || msg || t != tag || !strings.Contains(call, sha) {
			return redistest.NetFault{}
		}
		done = true
		return redistest.NetFault{Kind: redistest.NetHold, D: d + 7*time.Nanosecond}
	}
}
