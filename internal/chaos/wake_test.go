package chaos

import (
	"fmt"
	"slices"
	"time"
)

// The wake check: a release while a live, subscribed handle waits for the
// name is followed by that handle's acquire at once. In the bubble a
// delivered wake-up costs no time on the clock; a lost one (a registration
// left behind absorbed it) costs the waiter its poll interval. So an
// acquire later than wakeBound after such a release is a wake-up that went
// astray, though liveness (livenessBound) still holds. Releases anywhere in
// a schedule are too noisy for that (a FIFO queue's stale head, a Hub that
// gave up subscribing for 30s, a hold kept by a failed release): the check
// is made on the releases of the wake-probe step, which sets the stage.

const wakeBound = maxPoll / 20

// probe is a release the wake-probe step made while a live, subscribed
// waiter waited: that waiter, or another that waited before it, must take
// the name at once.
type probe struct {
	seq    int // the release
	waiter int // the handle that waits
	name   string
}

// wakeProbeStep plays, for rlock, the way a registration is left behind: a
// handle A of a process that cannot hear wake-ups (deaf) waits for the
// name by polling, and takes it when the holder's fixed lease runs out (no
// release woke A's registration); a handle B of a process that hears waits
// behind A; A releases. B must be woken: a wake spent on a registration of
// A's that outlived its wait leaves B to its poll interval. It reports
// whether it ran.
func (rn *run) wakeProbeStep(a int) bool {
	if _, ok := rn.prim.(rlockPrim); !ok {
		return false
	}
	idle := func(g int) bool {
		return !rn.w.procs[rn.hproc[g]].closed && !rn.isBusy(g) && !rn.rec.holding(g, false)
	}
	if !idle(a) {
		return false
	}
	holder := rn.idlePeer(a, idle)
	if holder < 0 {
		return false
	}
	pa := rn.w.procs[rn.hproc[a]]
	const lease = leaseTTL / 2
	rn.issue(opStep{kind: oAcquire, h: holder, a: acq{try: true, lease: lease}, ctxDur: 3 * leaseTTL}, false)
	rn.settle()
	if !rn.rec.holding(holder, false) || rn.isBusy(holder) {
		return true
	}
	pa.faults.Blackhole()
	rn.rec.fault(rn.hproc[a], "deaf (wake probe)")
	defer func() {
		pa.faults.Unblackhole()
		pa.faults.CloseAll()
		rn.rec.fault(rn.hproc[a], "end of deaf (wake probe)")
	}()
	rn.issue(opStep{kind: oAcquire, h: a, ctxDur: 3 * leaseTTL}, false)
	rn.settle()
	time.Sleep(lease + maxPoll + quietTick) // the holder's lease runs out: no release wakes anyone
	rn.settle()
	if !rn.rec.holding(a, false) || rn.isBusy(a) {
		return true
	}
	b := rn.idlePeer(a, func(g int) bool {
		p := rn.w.procs[rn.hproc[g]]
		if !idle(g) || rn.hproc[g] == rn.hproc[holder] || slices.ContainsFunc(rn.heals, func(h heal) bool { return h.proc == rn.hproc[g] }) {
			return false
		}
		hb, err := p.clients[0].Hub()
		return err == nil && hb != nil && hb.Stats().Err == nil
	})
	if b < 0 {
		return true
	}
	rn.w.procs[rn.hproc[b]].faults.Disarm()
	rn.issue(opStep{kind: oAcquire, h: b, ctxDur: 3 * leaseTTL}, false)
	rn.settle()
	if !rn.isBusy(b) {
		return true // it took the name: A's hold was lost meanwhile
	}
	rn.wd.probes = append(rn.wd.probes, probe{seq: rn.rec.seq + 1, waiter: b, name: rn.hs[a].names()[0]})
	rn.issue(opStep{kind: oRelease, h: a, ctxDur: leaseTTL}, false)
	return true
}

// checkProbes: after each probe's release, a hold of the name by another
// handle begins within wakeBound.
func (rn *run) checkProbes(events []event) []violation {
	var out []violation
	for _, p := range rn.wd.probes {
		var rel *event
		for i := range events {
			if e := &events[i]; e.kind == evReturn && e.seq == p.seq {
				rel = e
			}
		}
		if rel == nil || rel.res != "ok" {
			continue
		}
		next := time.Duration(-1)
		rn.rec.mu.Lock()
		for _, hr := range rn.rec.holds {
			if hr.h != rel.h && slices.Contains(hr.names, p.name) && hr.start >= rel.at && (next < 0 || hr.start < next) {
				next = hr.start
			}
		}
		rn.rec.mu.Unlock()
		if next >= 0 && next <= rel.at+wakeBound {
			continue
		}
		// The waiter's Hub was re-establishing its connection when the
		// release came (go-redis's PubSub pauses 100ms between failed
		// reads of a broken one): the waiter was not subscribed yet, and
		// took the name at once when the Hub confirmed the new connection
		// and its subscriptions (see confirm in internal/hub).
		t0 := rn.rec.t0
		if up, ok := rn.w.procs[rn.hproc[p.waiter]].hubUp(t0.Add(rel.at), t0.Add(next)); next >= 0 && ok &&
			next <= up.Sub(t0)+wakeBound {
			continue
		}
		after := "nobody took it"
		if next >= 0 {
			after = fmt.Sprintf("the next took it %v later", next-rel.at)
		}
		out = append(out, violation{check: "wake", name: p.name, at: rel.at, seq: p.seq,
			msg: fmt.Sprintf("h%d released at %.3fs while h%d waited, subscribed; %s (wake bound %v)", rel.h, rel.at.Seconds(), p.waiter, after, wakeBound)})
	}
	return out
}
