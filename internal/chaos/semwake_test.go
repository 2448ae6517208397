package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redcoord/redcoord/rsemaphore"
)

// The Semaphore's wake probe: at the end of the quiet phase, every handle
// idle, nothing held, the network sound and faults over for a lease and a
// poll interval, the probe plays with handles of its own the ways a wake
// of the waiter registry goes astray when a Client's waiters ask for
// different numbers of permits: a smaller acquire behind a larger one of
// its Client, a release by a Client whose registration a wake to it has
// just taken away, and a waiter that gives up its Client's wake while the
// message is on its way. Each ends in the wake check (wakeBound,
// wake_test.go): in the bubble a delivered wake costs no time on the
// clock, so when the permits that a live, subscribed waiter asks for are
// free in Redis, some waiter that fits takes them within wakeBound; a lost
// or misdirected wake leaves them free until a poll. The check is made
// only at instants the scenario chose, where no wake is legitimately on
// its way: a message that is late reaches a waiter that gave it up, or one
// whose wake was handed on already.

// semLate is how late the probe's Client hears messages while a wake to
// it is on its way: well past wakeBound, well within a poll interval.
const semLate = maxPoll / 2

// semProbe is one run of the probe: the permits its handles hold and its
// waiters.
type semProbe struct {
	rn      *run
	name    string
	held    map[int]int64 // permits held, by process
	waiters []*semWaiter
	late    []int // the processes that hear messages late
}

// semWaiter is one blocking Acquire of the probe.
type semWaiter struct {
	proc   int
	n      int64
	seq    int
	cancel context.CancelFunc
	done   chan error
	ended  bool
}

// wakeProbes runs the probes of the quiet phase's end: the Semaphore's and
// rlock's (lockdrop_test.go).
func (rn *run) wakeProbes() {
	if !rn.bubble { // a wake bound of milliseconds holds on the bubble's clock only
		return
	}
	rn.semWakeProbe()
	rn.lockDropProbe()
}

// semWakeProbe runs the probe, for the Semaphore only, when every process is
// live, hears messages, and every permit is free. Each scenario is drawn
// with even odds, on processes drawn for its roles. Its handles are unfair
// in a schedule of WithFair handles too: by then every fair waiter has
// ended, and the two kinds only may not wait at once.
func (rn *run) semWakeProbe() {
	if _, ok := rn.prim.(semPrim); !ok || rn.anyBusy() || rn.anyLiveHold() {
		return
	}
	for _, p := range rn.w.procs {
		hb, err := p.clients[0].Hub()
		if p.closed || err != nil || (hb != nil && hb.Stats().Err != nil) {
			return
		}
	}
	sp := &semProbe{rn: rn, name: rn.w.names[0], held: make(map[int]int64)}
	scenarios := []func(a, b, c int){
		sp.joinBehindLarger,
		func(a, b, c int) { sp.releaseWhileWoken(a, b, c, rn.r.IntN(2) == 0) },
		func(a, b, c int) { sp.givenUpWake(a, b, c, 1) },
		func(a, b, c int) { sp.givenUpWake(a, b, c, 2) },
	}
	for _, s := range scenarios {
		if rn.r.IntN(2) != 0 {
			continue
		}
		if avail, err := sp.available(); err != nil || avail != semPermits {
			return // the idle check reports it
		}
		roles := rn.r.Perm(len(rn.w.procs))
		s(roles[0], roles[1], roles[2])
		if !sp.cleanup() {
			return
		}
	}
}

// joinBehindLarger: a Client's Acquire of 1 permit comes while another
// Acquire of that Client waits for 2 and 1 is free: it must take it, not
// join the larger one's wait.
func (sp *semProbe) joinBehindLarger(a, _, c int) {
	if !sp.hold(c, 1) {
		return
	}
	sp.wait(a, 2)
	w := sp.wait(a, 1)
	sp.check(w.seq, fmt.Sprintf("p%d's Acquire(1) came while its Acquire(2) waited", a))
}

// releaseWhileWoken: a release wakes Client a, whose messages are late; a
// release of a's own handle then frees a permit while the wake is on its
// way: a's waiter must take it at once, and so must b's, if b waits.
func (sp *semProbe) releaseWhileWoken(a, b, c int, withB bool) {
	if !sp.hold(c, 1) || !sp.hold(a, 1) {
		return
	}
	sp.wait(a, 1)
	if withB {
		sp.rn.sleep(2 * time.Millisecond) // b registers after a: the release wakes a
		sp.wait(b, 1)
	}
	sp.hearLate(a)
	sp.release(c, 1)
	seq := sp.release(a, 1)
	sp.check(seq, fmt.Sprintf("p%d released a permit while a wake to p%d was on its way", a, a))
}

// givenUpWake: Client a waits for 1 permit and then for next, b for 1
// (registered after a); a release of 1 wakes a, whose messages are late,
// and a's waiter of 1 gives up while the wake is on its way. The wake must
// not be lost: a's other waiter takes the permit at once if it fits,
// b's otherwise.
func (sp *semProbe) givenUpWake(a, b, c int, next int64) {
	if !sp.hold(c, 2) {
		return
	}
	first := sp.wait(a, 1)
	sp.rn.sleep(2 * time.Millisecond) // b registers after a: the release wakes a
	sp.wait(b, 1)
	sp.wait(a, next)
	sp.hearLate(a)
	sp.release(c, 1)
	first.cancel()
	sp.rn.rec.fault(a, fmt.Sprintf("#%d's context canceled (sem wake probe)", first.seq))
	sp.rn.settle()
	sp.check(first.seq, fmt.Sprintf("p%d's Acquire(1) gave up a wake to p%d on its way", a, a))
}

// handle is a Semaphore of process p on the probe's name.
func (sp *semProbe) handle(p int) *rsemaphore.Semaphore {
	return rsemaphore.New(sp.rn.w.procs[p].clients[0], sp.name)
}

// call records a call of the probe's through process p in the history.
func (sp *semProbe) call(p int, what string) int {
	sp.rn.ops++
	return sp.rn.rec.call(p*handlesPerProc, p, "probe "+what, []string{sp.name})
}

func (sp *semProbe) ret(seq, p int, what, res string) {
	sp.rn.rec.ret(seq, p*handlesPerProc, p, "probe "+what, res)
}

// hold takes n permits through process p, and reports whether it did.
func (sp *semProbe) hold(p int, n int64) bool {
	what := fmt.Sprintf("TryAcquire(%d)", n)
	seq := sp.call(p, what)
	ctx, cancel := context.WithTimeout(context.Background(), leaseTTL)
	defer cancel()
	ok, err := sp.handle(p).TryAcquire(ctx, n)
	sp.ret(seq, p, what, outcome(ok, err))
	if ok {
		sp.held[p] += n
	}
	sp.rn.sleep(0)
	return ok
}

// release gives back n permits that process p holds, and returns the call's
// number.
func (sp *semProbe) release(p int, n int64) int {
	if sp.held[p] < n {
		return 0
	}
	sp.held[p] -= n
	what := fmt.Sprintf("Release(%d)", n)
	seq := sp.call(p, what)
	ctx, cancel := context.WithTimeout(context.Background(), leaseTTL)
	defer cancel()
	err := sp.handle(p).Release(ctx, n)
	sp.ret(seq, p, what, outcome(true, err))
	sp.rn.settle()
	return seq
}

// wait starts an Acquire of n permits through process p, and lets it run
// until it blocks.
func (sp *semProbe) wait(p int, n int64) *semWaiter {
	what := fmt.Sprintf("Acquire(%d)", n)
	w := &semWaiter{proc: p, n: n, seq: sp.call(p, what), done: make(chan error, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), 3*leaseTTL)
	w.cancel = cancel
	s := sp.handle(p)
	sp.rn.wg.Add(1)
	go func() {
		defer sp.rn.wg.Done()
		err := s.Acquire(ctx, n)
		sp.ret(w.seq, p, what, outcome(err == nil, err))
		w.done <- err
	}()
	sp.waiters = append(sp.waiters, w)
	sp.rn.settle()
	sp.rn.sleep(0)
	return w
}

// hearLate makes process p hear messages semLate late.
func (sp *semProbe) hearLate(p int) {
	sp.rn.w.procs[p].faults.DelaySubscribers(semLate)
	sp.late = append(sp.late, p)
	sp.rn.rec.fault(p, fmt.Sprintf("late messages(%v) (sem wake probe)", semLate))
}

// collect notes the waiters that returned, and the permits they took.
func (sp *semProbe) collect() {
	for _, w := range sp.waiters {
		if w.ended {
			continue
		}
		select {
		case err := <-w.done:
			w.ended = true
			if err == nil {
				sp.held[w.proc] += w.n
			}
		default:
		}
	}
}

// available reads the permits available in Redis.
func (sp *semProbe) available() (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return sp.rn.w.admin[0].HGet(ctx, "rc:{"+sp.name+"}:permits", "a").Int64()
}

// check is the probe's wake check, wakeBound after the event seq (what):
// no waiter still waits for permits that are free in Redis.
func (sp *semProbe) check(seq int, what string) {
	at := sp.rn.rec.now()
	sp.rn.sleep(wakeBound)
	sp.collect()
	avail, err := sp.available()
	if err != nil {
		return
	}
	var stuck []string
	for _, w := range sp.waiters {
		if !w.ended && w.n <= avail {
			stuck = append(stuck, fmt.Sprintf("p%d's Acquire(%d) #%d", w.proc, w.n, w.seq))
		}
	}
	if len(stuck) == 0 {
		return
	}
	sp.rn.violate(violation{check: "wake", name: sp.name, at: sp.rn.rec.now(), seq: seq,
		msg: fmt.Sprintf("%s at %.3fs; %v later %d permits were free and %s still waited, subscribed (wake bound %v)",
			what, at.Seconds(), wakeBound, avail, strings.Join(stuck, ", "), wakeBound)})
}

// cleanup ends the scenario: messages on time again, the late ones
// delivered, every waiter canceled and every permit given back. It reports
// whether every waiter returned and every permit went back.
func (sp *semProbe) cleanup() bool {
	for _, p := range sp.late {
		sp.rn.w.procs[p].faults.DelaySubscribers(0)
		sp.rn.rec.fault(p, "end of late messages (sem wake probe)")
	}
	if len(sp.late) > 0 {
		sp.late = nil
		sp.rn.sleep(semLate) // the late messages come
	}
	for _, w := range sp.waiters {
		w.cancel()
	}
	for range 20 {
		sp.rn.settle()
		sp.collect()
		if !slices.ContainsFunc(sp.waiters, func(w *semWaiter) bool { return !w.ended }) {
			break
		}
		sp.rn.sleep(maxPoll / 4)
	}
	ok := !slices.ContainsFunc(sp.waiters, func(w *semWaiter) bool { return !w.ended })
	sp.waiters = nil
	for p := range sp.rn.w.procs {
		if n := sp.held[p]; n > 0 && sp.release(p, n) == 0 {
			return false
		}
	}
	return ok
}
