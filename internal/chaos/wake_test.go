package chaos

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// The wake check: once faults stop, a release while a live handle waits
// for the name is followed by an acquire of it at once. In the bubble a
// delivered wake-up costs no time on the clock; a lost one (a registration
// left behind absorbed it, or nobody was registered) costs the waiter its
// poll interval. So an acquire later than wakeBound after such a release is
// a wake-up that went astray, though liveness (livenessBound) still holds.

const wakeBound = maxPoll / 20

// wakeChecked reports whether p's waiters are woken one at a time by a
// release, so that every release with a waiter must hand the name on. A
// FIFO primitive (rfairlock, relection) hands the name to the head of its
// queue, which may be a waiter that gave up and whose leave was lost: it
// waits for that entry to go stale, by design.
func wakeChecked(p primitive) bool {
	switch p.(type) {
	case rlockPrim, semPrim, xsemPrim:
		return true
	}
	return false
}

// checkWake reads the quiet phase of the history. Releases are counted from
// when faults stopped, and from a lease after the last Client.Close (a
// closed process's registration may absorb one wake-up until its lease
// runs out, by design).
func (rn *run) checkWake(events []event) []violation {
	if !wakeChecked(rn.prim) || rn.rec.quiet < 0 {
		return nil
	}
	from := rn.rec.quiet
	for _, at := range rn.rec.closed {
		from = max(from, at+leaseTTL+maxPoll)
	}
	type op struct {
		call, ret event
		returned  bool
	}
	ops := make(map[int]*op)
	var order []int
	for _, e := range events {
		switch e.kind {
		case evCall:
			ops[e.seq] = &op{call: e}
			order = append(order, e.seq)
		case evReturn:
			if o := ops[e.seq]; o != nil {
				o.ret, o.returned = e, true
			}
		}
	}
	blocking := func(what string) bool {
		what = strings.TrimPrefix(what, "quiet ")
		return strings.HasPrefix(what, "Lock")
	}
	// A process whose Hub could not subscribe polls for a while by design
	// (it tries again 30s later): a release while one of its handles waits
	// is not checked.
	polls := make(map[int]bool)
	for i, p := range rn.w.procs {
		for _, c := range p.clients {
			if hb, err := c.Hub(); err == nil && hb != nil && hb.Stats().Err != nil {
				polls[i] = true
			}
		}
	}
	// A release hands the name on when it ends a belief (the last Unlock
	// of a re-entered hold) and Redis answered it at once.
	type rel struct {
		at    time.Duration
		h     int
		names []string
		seq   int
	}
	var rels []rel
	rn.rec.mu.Lock()
	for _, hr := range rn.rec.holds {
		if hr.endHow != "unlock" || hr.end < from || reentered(hr, rn.rec.holds) {
			continue
		}
		for _, seq := range order {
			o := ops[seq]
			ok := o.returned && ((strings.HasPrefix(o.call.what, "Unlock") && o.ret.res == "ok") ||
				(strings.HasPrefix(o.call.what, "quiet ") && strings.HasSuffix(o.ret.res, "released: ok")))
			if ok && o.call.h == hr.h && o.ret.at >= hr.end && o.ret.at <= hr.end+wakeBound {
				rels = append(rels, rel{at: hr.end, h: hr.h, names: hr.names, seq: seq})
				break
			}
		}
	}
	rn.rec.mu.Unlock()
	var out []violation
	done := make(map[string]bool)
	for _, r := range rels {
		t := r.at
		for _, name := range r.names {
			if done[name] {
				continue
			}
			waiter, deaf := -1, false
			for _, s := range order {
				w := ops[s]
				if w.call.h == r.h || !blocking(w.call.what) || !slices.Contains(w.call.names, name) ||
					w.call.at > t || (w.returned && w.ret.at <= t+wakeBound) || rn.w.procs[w.call.proc].closed {
					continue
				}
				if polls[w.call.proc] {
					deaf = true
				}
				if waiter < 0 {
					waiter = w.call.h
				}
			}
			if waiter < 0 || deaf {
				continue
			}
			next := time.Duration(-1)
			rn.rec.mu.Lock()
			for _, hr := range rn.rec.holds {
				if hr.h != r.h && hr.start >= t && slices.Contains(hr.names, name) && (next < 0 || hr.start < next) {
					next = hr.start
				}
			}
			rn.rec.mu.Unlock()
			if next >= 0 && next <= t+wakeBound {
				continue
			}
			after := "none came"
			if next >= 0 {
				after = fmt.Sprintf("the next came %v later", next-t)
			}
			done[name] = true
			out = append(out, violation{check: "wake", name: name, at: t, seq: r.seq,
				msg: fmt.Sprintf("h%d released at %.3fs while h%d waited; %s (wake bound %v)", r.h, t.Seconds(), waiter, after, wakeBound)})
		}
	}
	return out
}

// reentered reports whether hr re-entered a hold its handle had before (the
// same tokens): a hold a failed release left to its lease, which the
// release of hr does not end.
func reentered(hr *holdRec, holds []*holdRec) bool {
	for _, a := range holds {
		if a != hr && a.h == hr.h && a.start < hr.start && len(a.tokens) > 0 && maps.Equal(a.tokens, hr.tokens) {
			return true
		}
	}
	return false
}

// probe is a release the wake-probe step made while a live, subscribed
// waiter waited: that waiter must take the name at once.
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

// checkProbes: after each probe's release, its waiter's hold begins within
// wakeBound.
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
			if hr.h == p.waiter && hr.start >= rel.at && (next < 0 || hr.start < next) {
				next = hr.start
			}
		}
		rn.rec.mu.Unlock()
		if next >= 0 && next <= rel.at+wakeBound {
			continue
		}
		after := "it never took it"
		if next >= 0 {
			after = fmt.Sprintf("it took it %v later", next-rel.at)
		}
		out = append(out, violation{check: "wake", name: p.name, at: rel.at, seq: p.seq,
			msg: fmt.Sprintf("h%d released at %.3fs while h%d waited, subscribed; %s (wake bound %v)", rel.h, rel.at.Seconds(), p.waiter, after, wakeBound)})
	}
	return out
}
