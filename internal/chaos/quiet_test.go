package chaos

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The quiet phase: faults stop, holders release, and every live handle
// acquires once (releasing at once). Each of those acquires must succeed
// within quietBound of the moment faults stopped. Then, with every handle
// idle and every lease of a closed process run out, nothing may be left in
// Redis but the fencing counters and what the primitive keeps by design.

func (rn *run) quiet() {
	rn.settle()
	rn.quietMore()
	for i, p := range rn.w.procs {
		p.heal()
		rn.rec.fault(i, "heal all")
	}
	rn.heals = nil
	// Healing breaks connections: a reply held back arrives, or its call
	// fails. Those calls end before the holds to release are looked up.
	rn.settle()
	rn.rec.mu.Lock()
	rn.rec.quiet = rn.rec.now()
	rn.rec.mu.Unlock()
	tq := rn.rec.quiet

	rn.checkCounts()
	rn.releaseHolds()
	rn.settle()
	if rn.retryReleases() {
		// Faults stopped for good when the permits came back.
		rn.rec.mu.Lock()
		rn.rec.quiet = rn.rec.now()
		rn.rec.mu.Unlock()
		tq = rn.rec.quiet
	}
	for h := range rn.hs {
		if !rn.isBusy(h) && !rn.w.procs[rn.hproc[h]].closed && !rn.rec.holding(h, false) && !rn.rec.holding(h, true) {
			rn.issue(opStep{kind: oAcquire, h: h, ctxDur: 2 * rn.liveBound()}, true)
		}
	}
	rn.settle()
	// Every call has a deadline; this bounds the wait for them all the same.
	for rn.anyBusy() || rn.anyLiveHold() {
		if rn.rec.now() > tq+4*rn.liveBound()+3*leaseTTL {
			rn.violate(violation{check: "liveness", at: rn.rec.now(), seq: rn.rec.seq,
				msg: "operations still running long after faults stopped"})
			return
		}
		rn.sleep(quietTick)
		rn.releaseHolds()
		rn.settle()
	}
	rn.sleep(rn.maxLease() + maxPoll) // holds of closed processes run out
	rn.settle()
	rn.wakeProbes()
	rn.idleCheck()
}

// releaseRetrier is implemented by handles whose failed releases leave
// what they held taken for good (a Semaphore's permits): failedReleases
// says how much each that failed gave back, retryRelease sends one of
// them again, when every handle is idle, and forgets it.
type releaseRetrier interface {
	failedReleases() []int64
	retryRelease(ctx context.Context, n int64) error
}

// retryReleases waits, if a handle has failed releases to send again, for
// every handle to be idle (bounded as the quiet phase is), then has them
// sent again, the largest first; it reports whether it did. A failed
// Release whose first try was applied after all is refused (the permits
// would exceed the total), so the retries free exactly what is still
// taken, and what cannot be settled is a leftover.
func (rn *run) retryReleases() bool {
	type retry struct {
		r releaseRetrier
		n int64
	}
	var rs []retry
	for _, h := range rn.hs {
		if r, ok := h.(releaseRetrier); ok {
			for _, n := range r.failedReleases() {
				rs = append(rs, retry{r, n})
			}
		}
	}
	if len(rs) == 0 {
		return false
	}
	for rn.anyBusy() || rn.anyLiveHold() {
		if rn.rec.now() > rn.rec.quiet+4*rn.liveBound() {
			return false // the quiet phase reports it
		}
		rn.sleep(quietTick)
		rn.releaseHolds()
		rn.settle()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	slices.SortStableFunc(rs, func(a, b retry) int { return cmp.Compare(b.n, a.n) })
	var found []string
	for _, r := range rs {
		if err := r.r.retryRelease(ctx, r.n); err != nil {
			found = append(found, fmt.Sprintf("a failed Release(%d) sent again failed: %v", r.n, err))
		}
	}
	if len(found) > 0 {
		rn.violate(violation{check: "leftover", at: rn.rec.now(), seq: rn.rec.seq, msg: strings.Join(found, "; ")})
	}
	return true
}

// lostKeeper is implemented by handles whose hold, once its Lost closed,
// may still hold some of its names in Redis until it is released: the
// recorder ends the belief at the loss, yet the release is still owed.
type lostKeeper interface{ keepsAfterLoss() bool }

// owesRelease reports whether h's lost hold still holds names.
func (rn *run) owesRelease(h int) bool {
	k, ok := rn.hs[h].(lostKeeper)
	return ok && k.keepsAfterLoss()
}

// releaseHolds unlocks the holds of live, idle handles, and the lost ones
// that still hold names.
func (rn *run) releaseHolds() {
	for h := range rn.hs {
		if rn.isBusy(h) || rn.w.procs[rn.hproc[h]].closed {
			continue
		}
		for _, read := range []bool{false, true} {
			if rn.rec.holding(h, read) || (!read && rn.owesRelease(h)) {
				rn.issue(opStep{kind: oRelease, h: h, a: acq{read: read}, ctxDur: leaseTTL}, false)
				break
			}
		}
	}
}

// anyLiveHold reports whether a handle of a live process believes it holds,
// or owes the release of a lost hold.
func (rn *run) anyLiveHold() bool {
	for h := range rn.hs {
		if !rn.w.procs[rn.hproc[h]].closed && (rn.rec.holding(h, false) || rn.rec.holding(h, true) || rn.owesRelease(h)) {
			return true
		}
	}
	return false
}

func (rn *run) anyBusy() bool {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	for _, b := range rn.busy {
		if b {
			return true
		}
	}
	return false
}

// idleChecker is implemented by primitives that keep state of their own to
// check when idle (permits back to their total).
type idleChecker interface {
	idle(ctx context.Context, w *world) []string
}

// leftovers are the keys that say someone holds or waits: with every handle
// idle, none may have a live entry.
var leftovers = map[string]bool{"lock": true, "queue": true, "alive": true, "waiters": true, "readers": true, "leases": true, "writers": true}

// idleCheck looks at every server's keys.
func (rn *run) idleCheck() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var found []string
	for si, a := range rn.w.admin {
		keys, err := a.Keys(ctx, "*").Result()
		if err != nil {
			found = append(found, fmt.Sprintf("server %d: KEYS: %v", si, err))
			continue
		}
		now, _ := a.Time(ctx).Result()
		nowMs := now.UnixMilli()
		for _, k := range keys {
			kind := k[strings.LastIndex(k, ":")+1:]
			if !leftovers[kind] {
				continue
			}
			typ, _ := a.Type(ctx, k).Result()
			switch typ {
			case "zset":
				zs, _ := a.ZRangeWithScores(ctx, k, 0, -1).Result()
				for _, z := range zs {
					if int64(z.Score) > nowMs {
						found = append(found, fmt.Sprintf("%s: %v (live for %dms more)", k, z.Member, int64(z.Score)-nowMs))
					}
				}
			case "list":
				l, _ := a.LRange(ctx, k, 0, -1).Result()
				if len(l) > 0 {
					found = append(found, fmt.Sprintf("%s: %v", k, l))
				}
			case "hash":
				m, _ := a.HGetAll(ctx, k).Result()
				found = append(found, fmt.Sprintf("%s: %d fields", k, len(m)))
			case "none":
			default:
				found = append(found, k+": a "+typ)
			}
		}
	}
	if ic, ok := rn.prim.(idleChecker); ok {
		found = append(found, ic.idle(ctx, rn.w)...)
	}
	if len(found) > 0 {
		rn.violate(violation{check: "leftover", at: rn.rec.now(), seq: rn.rec.seq,
			msg: "with every handle idle: " + strings.Join(found, "; ")})
	}
}

// redisCounter is implemented by the handles of re-entrant locks: the hold
// count Redis keeps for the handle's owner.
type redisCounter interface {
	redisCount(ctx context.Context) (int64, error)
}

// checkCounts compares, once faults stopped, the hold count Redis keeps for
// each idle handle that believes it holds with the re-entries it believes
// in. Redis may count fewer: a release of a re-entry that failed may have
// been applied, and a hold gone from Redis (0) is one whose loss the handle
// has yet to learn. It may count more only by re-entries that failed (each
// may have been applied, its undo lost), which the last release drops.
func (rn *run) checkCounts() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for h, hd := range rn.hs {
		rc, ok := hd.(redisCounter)
		if !ok || rn.isBusy(h) || rn.w.procs[rn.hproc[h]].closed {
			continue
		}
		hr, count, failed := rn.rec.believed(h)
		if hr == nil || isClosed(hr.lostCh) || (hr.ctx != nil && hr.ctx.Err() != nil) {
			continue
		}
		n, err := rc.redisCount(ctx)
		if err != nil || n == 0 || (int(n) < count && failed > 0) || int(n) == count ||
			(int(n) > count && int(n) <= count+rn.rec.failedReentries(hr)) {
			continue
		}
		rn.violate(violation{check: "holdcount", name: hr.names[0], at: rn.rec.now(), seq: hr.seq,
			msg: fmt.Sprintf("Redis counts %d for h%d's hold #%d, whose handle believes in %d (%d releases of a re-entry failed)", n, h, hr.seq, count, failed)})
	}
}

// quietBound is how long after faults stopped a quiet acquire of names may
// return: liveBound, which counts one hold taken meanwhile (by an acquire
// called before faults stopped), and as much again for each further one
// on these names. Each may have cost its waiter a poll interval (its grant
// message lost while its Client's Hub subscribed again, as the heal broke
// its connection: "A grant message that is lost (a reconnect) costs at
// most one poll interval", rfairlock's doc, Liveness), and the driver
// releases it within quietTick; a quiet acquire queued behind them waits
// for each in turn.
func (rn *run) quietBound(names []string) time.Duration {
	r := rn.rec
	r.mu.Lock()
	n := 0
	for _, hr := range r.holds {
		if hr.called < r.quiet && hr.start >= r.quiet && slices.ContainsFunc(hr.names, func(x string) bool {
			return slices.Contains(names, x)
		}) {
			n++
		}
	}
	r.mu.Unlock()
	return rn.liveBound() + time.Duration(max(n-1, 0))*(maxPoll+quietTick)
}
