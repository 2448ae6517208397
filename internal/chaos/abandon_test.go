package chaos

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/internal/scripts"
)

// abandonStep plays, now and then for rfairlock, a waiter that gives up
// and whose leave is lost: w queues behind h, which holds the name by a
// renewed lease; w's Lock ends at its deadline, and the network drops
// every copy of its leave before the server. Its queue entry is then left
// to its heartbeat's deadline: w's Lock stopped its heartbeat, so once
// that has passed, with h still holding and nobody else at the name, the
// queue has no live entry (check "leftover"). An entry kept alive would
// take the next hand-off from a waiter that is there. It reports whether
// it ran.
func (rn *run) abandonStep(w int) bool {
	if _, ok := rn.prim.(rfairlockPrim); !ok || rn.w.net == nil || !rn.wd.netOn || rn.r.IntN(8) != 0 {
		return false
	}
	idle := func(g int) bool {
		pi := rn.hproc[g]
		return !rn.w.procs[pi].closed && !rn.isBusy(g) && !rn.rec.holding(g, false) && !rn.paused(pi)
	}
	if !idle(w) {
		return false
	}
	h := rn.idlePeer(w, idle)
	if h < 0 {
		return false
	}
	name := rn.hs[w].names()[0]
	for g := range rn.hs {
		if g != w && g != h && slicesHas(rn.hs[g].names(), name) && (rn.isBusy(g) || rn.rec.holding(g, false)) {
			return false
		}
	}
	rn.netCalm()
	defer rn.w.net.SetDraw(rn.wd.draw)
	if len(rn.lockKeys([]string{name})) > 0 || len(rn.liveQueue(name)) > 0 {
		return false
	}
	for _, g := range []int{w, h} {
		p := rn.w.procs[rn.hproc[g]]
		p.faults.Disarm()
		p.faults.CloseAll()
		rn.rec.fault(rn.hproc[g], "break (abandon)")
	}
	rn.settle()
	rn.issue(opStep{kind: oAcquire, h: h, a: acq{try: true}, ctxDur: 3 * leaseTTL}, false)
	rn.settle()
	if !rn.rec.holding(h, false) || rn.isBusy(h) {
		return true
	}
	leave := scriptHash("fair_leave")
	tag := rn.hproc[w] * netServers
	rn.w.net.SetDraw(func(t int, msg bool, call string) redistest.NetFault {
		if !msg && t == tag && strings.Contains(call, leave) {
			return redistest.NetFault{Kind: redistest.NetDropBefore, D: time.Microsecond}
		}
		return redistest.NetFault{}
	})
	rn.issue(opStep{kind: oAcquire, h: w, ctxDur: maxPoll}, false)
	for i := 0; i < 10 && (i == 0 || rn.isBusy(w)); i++ {
		rn.sleep(maxPoll / 2)
	}
	if rn.isBusy(w) || rn.rec.holding(w, false) {
		return true
	}
	rn.sleep(2 * leaseTTL)
	rn.settle()
	if !rn.rec.holding(h, false) {
		return true // the hold's loss handed the name on
	}
	if live := rn.liveQueue(name); len(live) > 0 {
		rn.violate(violation{check: "leftover", name: name, at: rn.rec.now(), seq: rn.rec.seq,
			msg: fmt.Sprintf("the queue of %s holds %v, live, %v after h%d's Lock gave up: nobody waits", name, live,
				2*leaseTTL, w)})
	}
	return true
}

// liveQueue returns the fair queue's entries for name whose heartbeat
// deadline has not passed, on server 0.
func (rn *run) liveQueue(name string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), leaseTTL)
	defer cancel()
	a := rn.w.admin[0]
	now, err := a.Time(ctx).Result()
	if err != nil {
		return nil
	}
	zs, _ := a.ZRangeWithScores(ctx, "rc:{"+name+"}:alive", 0, -1).Result()
	var live []string
	for _, z := range zs {
		if int64(z.Score) > now.UnixMilli() {
			live = append(live, fmt.Sprint(z.Member))
		}
	}
	return live
}

// scriptHash returns the SHA1 of the script named name.
func scriptHash(name string) string {
	for _, s := range scripts.All() {
		if s.Name() == name {
			return s.Hash()
		}
	}
	panic("chaos: no script " + name)
}

func slicesHas(xs []string, x string) bool { return sharesName(xs, []string{x}) }
