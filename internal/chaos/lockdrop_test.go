package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/internal/scripts"
	"github.com/redcoord/redcoord/rlock"
)

// The rlock's registration probe: at the end of the quiet phase (see
// semWakeProbe), it plays, with handles of its own on a name the suite's
// rlock handles leave alone, a Client's lone waiter woken by a release
// (or taking the lock at its poll, the holder's fixed lease run out)
// while the network holds that Client's registry leaves for lockDropLate.
// The try that takes the lock takes the Client out of the registry with
// it: no round trip more is owed, and the Lock returns at once. One that
// left the registration for a leave to drop would return only once that
// leave is through, its caller waiting on a lock that Redis already gave
// it. The check is the wake check's: wakeBound after the release, the
// woken waiter holds. Then a waiter of another Client comes, and the lone
// waiter releases: the registration its take dropped must not take that
// release's wake.

// lockDropLate is how long the network holds the probe Client's leaves.
const lockDropLate = maxPoll / 2

// lockDropLease is the fixed lease of a holder that the probe lets run out.
const lockDropLease = maxPoll / 2

// lockDropProbe runs the probe, for rlock only, with even odds, when two
// live processes hear messages.
func (rn *run) lockDropProbe() {
	if _, ok := rn.prim.(rlockPrim); !ok || rn.w.net == nil || rn.anyBusy() || rn.r.IntN(2) != 0 {
		return
	}
	var live []int
	for i, p := range rn.w.procs {
		if hb, err := p.clients[0].Hub(); !p.closed && err == nil && (hb == nil || hb.Stats().Err == nil) {
			live = append(live, i)
		}
	}
	if len(live) < 2 {
		return
	}
	rn.r.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
	a, b := live[0], live[1]
	name := rn.w.names[2]
	var leave string
	for _, s := range scripts.All() {
		if s.Name() == "lock_leave" {
			leave = s.Hash()
		}
	}
	rn.w.net.SetDraw(func(tag int, msg bool, call string) redistest.NetFault {
		if !msg && tag/netServers == a && strings.Contains(call, leave) {
			return redistest.NetFault{Kind: redistest.NetHold, D: lockDropLate}
		}
		return redistest.NetFault{}
	})
	defer func() {
		rn.w.net.SetDraw(nil)
		rn.netCalm()
	}()

	lp := &lockProbe{rn: rn, name: name}
	defer lp.cleanup()
	x := lp.mutex(b)
	expire := rn.r.IntN(2) == 0
	if !lp.tryLock(b, x, expire) {
		return
	}
	w := lp.lock(a)
	if expire {
		rn.sleep(lockDropLease + maxPoll + wakeBound) // a's waiter polls, and takes the lock
		lp.collect()
	} else {
		seq := lp.unlock(b, x)
		lp.check(w, seq, fmt.Sprintf("p%d released the lock while p%d's lone Lock waited", b, a))
	}
	if !w.ok {
		return
	}
	// a's Client is out of the registry: a waiter of b, registered after
	// a's take, is the one a's release wakes.
	rn.sleep(2 * time.Millisecond)
	v := lp.lock(b)
	seq := lp.unlock(a, w.m)
	w.ok = false
	lp.check(v, seq, fmt.Sprintf("p%d released the lock its lone waiter took while p%d's Lock waited", a, b))
}

// lockProbe is one run of the probe.
type lockProbe struct {
	rn      *run
	name    string
	waiters []*lockWaiter
}

// lockWaiter is one Lock of the probe.
type lockWaiter struct {
	proc   int
	m      *rlock.Mutex
	seq    int
	cancel context.CancelFunc
	done   chan error
	ended  bool
	ok     bool
}

func (lp *lockProbe) mutex(p int) *rlock.Mutex {
	return rlock.New(lp.rn.w.procs[p].clients[0], lp.name)
}

func (lp *lockProbe) call(p int, what string) int {
	lp.rn.ops++
	return lp.rn.rec.call(p*handlesPerProc, p, "probe "+what, []string{lp.name})
}

func (lp *lockProbe) ret(seq, p int, what, res string) {
	lp.rn.rec.ret(seq, p*handlesPerProc, p, "probe "+what, res)
}

// tryLock takes the lock through m, of process p, with a fixed lease of
// lockDropLease if fixed, and reports whether it did.
func (lp *lockProbe) tryLock(p int, m *rlock.Mutex, fixed bool) bool {
	what := "TryLock"
	if fixed {
		what = fmt.Sprintf("TryLock(lease=%v)", lockDropLease)
	}
	seq := lp.call(p, what)
	ctx, cancel := context.WithTimeout(context.Background(), leaseTTL)
	defer cancel()
	var ok bool
	var err error
	if fixed {
		ok, err = m.TryLockWithLease(ctx, lockDropLease)
	} else {
		ok, err = m.TryLock(ctx)
	}
	lp.ret(seq, p, what, outcome(ok, err))
	lp.rn.sleep(0)
	return ok
}

// unlock releases m's hold, of process p, and returns the call's number.
func (lp *lockProbe) unlock(p int, m *rlock.Mutex) int {
	seq := lp.call(p, "Unlock")
	ctx, cancel := context.WithTimeout(context.Background(), leaseTTL)
	defer cancel()
	lp.ret(seq, p, "Unlock", outcome(true, m.Unlock(ctx)))
	lp.rn.settle()
	return seq
}

// lock starts a Lock through a new handle of process p, and lets it run
// until it blocks.
func (lp *lockProbe) lock(p int) *lockWaiter {
	w := &lockWaiter{proc: p, m: lp.mutex(p), seq: lp.call(p, "Lock"), done: make(chan error, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), 3*leaseTTL)
	w.cancel = cancel
	lp.rn.wg.Add(1)
	go func() {
		defer lp.rn.wg.Done()
		err := w.m.Lock(ctx)
		lp.ret(w.seq, p, "Lock", outcome(err == nil, err))
		w.done <- err
	}()
	lp.waiters = append(lp.waiters, w)
	lp.rn.settle()
	lp.rn.sleep(0)
	return w
}

// collect notes the Locks that returned.
func (lp *lockProbe) collect() {
	for _, w := range lp.waiters {
		if w.ended {
			continue
		}
		select {
		case err := <-w.done:
			w.ended, w.ok = true, err == nil
		default:
		}
	}
}

// check is the probe's wake check, wakeBound after the release seq
// (what): the waiter w holds. It reports whether w's Lock returned.
func (lp *lockProbe) check(w *lockWaiter, seq int, what string) bool {
	at := lp.rn.rec.now()
	lp.rn.sleep(wakeBound)
	lp.collect()
	if w.ended {
		return true
	}
	lp.rn.violate(violation{check: "wake", name: lp.name, at: lp.rn.rec.now(), seq: seq,
		msg: fmt.Sprintf("%s at %.3fs; %v later its Lock #%d still waited, subscribed (wake bound %v)",
			what, at.Seconds(), wakeBound, w.seq, wakeBound)})
	return false
}

// cleanup cancels the Locks still waiting and releases every hold taken.
func (lp *lockProbe) cleanup() {
	for _, w := range lp.waiters {
		w.cancel()
	}
	for range 20 {
		lp.rn.settle()
		lp.collect()
		if !slices.ContainsFunc(lp.waiters, func(w *lockWaiter) bool { return !w.ended }) {
			break
		}
		lp.rn.sleep(maxPoll / 4)
	}
	for _, w := range lp.waiters {
		if w.ok {
			w.ok = false
			lp.unlock(w.proc, w.m)
		}
	}
}
