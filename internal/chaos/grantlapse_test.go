package chaos

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redcoord/redcoord/internal/redistest"
)

// The lapsed grant (rfairlock, relection): a release grants the name to a
// waiter W, the network delays the grant's message, and it holds W's next
// try past the grant's lease. Nobody renews the grant (W does not
// know of it): it runs out, and a handle G of a third process takes the
// name. W's held try lands and finds G holding, W tries again, and only
// then does the grant's message reach W. A grant message is a hint (see
// hold.fairAttempt.confirm): W must ask Redis before it takes the grant
// for its hold, or it believes beside G (exclusivity), with no fault the
// checkers excuse. The step runs on a network emptied of what it held and
// faulting no more (hush).

const (
	// lapseHold is how long the network holds W's try: past the grant's
	// lease, within go-redis's read timeout.
	lapseHold = leaseTTL + maxPoll/2
	// lapseLate is how late the grant's message reaches W: after W's next
	// try, which comes at most a poll interval after the held one lands
	// (itself sent at most a poll interval after the grant), and within a
	// third of a lease of it.
	lapseLate = lapseHold + 2*maxPoll + maxPoll/4
)

// grantLapseStep may play the lapsed grant with w as the waiter, once per
// schedule; it reports whether it ran.
func (rn *run) grantLapseStep(w int) bool {
	switch rn.prim.(type) {
	case rfairlockPrim, relectionPrim:
	default:
		return false
	}
	if rn.wd.lapsed || rn.w.net == nil || !rn.wd.netOn || rn.r.IntN(6) != 0 {
		return false
	}
	if holder, g := rn.fairRoles(w); holder < 0 || g < 0 {
		return false
	}
	rn.wd.lapsed = true
	defer rn.hush()()
	holder, g := rn.fairRoles(w)
	if holder < 0 || g < 0 || !rn.subscribed(rn.hproc[w]) {
		return true
	}
	// W waits with a lease the watchdog renews: a fixed lease's grant is
	// confirmed in any case.
	if !rn.queueUp(holder, w, -1, opStep{kind: oAcquire, h: w, ctxDur: 3 * leaseTTL}) || !rn.soleHold(holder) {
		return true
	}
	pw, name := rn.hproc[w], rn.hs[w].names()[0]
	// The matcher runs under the network's lock, when W's try is written.
	var sent atomic.Int64
	tag, sha := pw*netServers, scriptSHA("fair_acquire")
	rn.w.net.ArmFor(func(t int, call string) bool {
		if t != tag || !strings.Contains(call, sha) || !strings.Contains(call, "{"+name+"}") {
			return false
		}
		sent.Store(int64(rn.rec.now()))
		return true
	}, redistest.NetFault{Kind: redistest.NetHold, D: lapseHold})
	// The next message the network pushes is the release's grant to W:
	// nothing else runs meanwhile. What follows it on W's subscriber
	// connection waits for it, and no longer.
	rn.w.net.Arm(redistest.NetFault{Kind: redistest.NetMsgDelay, D: lapseLate})
	rn.rec.fault(pw, fmt.Sprintf("next try held(%v), next message late(%v) (lapsed grant)", lapseHold, lapseLate))
	granted := rn.rec.now()
	rn.issue(opStep{kind: oRelease, h: holder, ctxDur: leaseTTL}, false)
	lease, ok := rn.pttl(name)
	if !ok || procOf(rn.lockOwner(name)) != pw {
		rn.w.net.Disarm()
		return true // the release did not grant to W
	}
	rn.sleep(lease + 2*time.Millisecond)
	if at := time.Duration(sent.Load()); at == 0 || at+lapseHold <= rn.rec.now() || !rn.isBusy(w) {
		rn.w.net.Disarm()
		return true // W's try was not held, or lands before G can take the name
	}
	rn.issue(opStep{kind: oAcquire, h: g, a: acq{try: true}, ctxDur: 3 * leaseTTL}, false)
	if !rn.rec.holding(g, false) {
		return true
	}
	// The message comes; a waiter that took it for its hold now believes
	// beside G.
	rn.sleepUntil(granted + lapseLate + maxPoll/4)
	return true
}

// lockOwner returns the owner that server 0's lock hash of name names, or
// "".
func (rn *run) lockOwner(name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	o, _ := rn.w.admin[0].HGet(ctx, "rc:{"+name+"}:lock", "o").Result()
	return o
}
