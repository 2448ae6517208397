package chaos

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The stranded-waiter check: in a fault-free stretch, a waiter that waits
// more than strandBound while what it asks for is free has been left
// behind: a waiter re-tries within the poll interval whatever it hears, so
// only a wait that nothing wakes lasts longer. Free means both that no
// handle believes it holds the name (beyond the waiter's share: a reader
// beside readers, a permit beside fewer than all) and that Redis agrees:
// after a fault a lease, a queue entry or a taken permit may pin the name
// with no one believing in it, until it expires. Redis is sampled through
// the world's fault-free admin clients each time the driver's clock
// moves (sleep), and the check runs over the samples after the run, in
// the bubble's clock, so a finding is the seed's, not the machine's.

// strandBound is how long a waiter may wait while its name is free: one
// poll interval, and a round trip's worth of the driver's own steps.
const strandBound = maxPoll + maxPoll/10

// calmMargin is how long after a fault a stretch is not yet fault-free: a
// try that failed backs off for up to a poll interval.
const calmMargin = maxPoll

// sampleEvery is the least bubble time between two samples, and how often
// the driver samples during a long sleep.
const sampleEvery = maxPoll / 4

// nameState is what Redis says of one name at a sample.
type nameState struct {
	held    bool  // a lock hash (a write hold, a leader) on some server
	reads   int   // live read leases (rrwlock)
	writers int   // live waiting writers (rrwlock)
	queue   []int // the processes of the live queue entries (fair kinds)
	avail   int   // permits available (semaphores)
	queued  int   // permits the live queue entries ask for (a fair Semaphore)
}

// sample is the state at one instant of the driver. A fault of one
// process reaches another's waiter only through what Redis holds and what
// handles believe, which the check reads, so fault-free is per process.
type sample struct {
	at       time.Duration
	calm     []bool          // per process: no fault active, armed or in flight
	calmFrom []time.Duration // per process: its fault-free stretch begins no earlier
	names    map[string]nameState
	ok       bool // Redis answered
}

// faultTrack follows, from the history's fault events and each process's
// fault counters, which faults are active, armed or in flight.
type faultTrack struct {
	next     int               // the first event not read yet
	active   []map[string]int  // per process: lasting faults in effect, by kind
	back     bool              // a server's clock stepped back, until "heal all"
	delays   [][]time.Duration // per process: armed delays, oldest first
	drops    []int             // per process: armed drops
	seen     [][2]int          // per process: Delayed and Fired when last read
	calmFrom []time.Duration   // per process: no fault-free stretch begins before
	global   time.Duration     // the same for every process (a server's fault)
}

// waitRec is one blocking acquire: from its call to its return, or to the
// end of its context if that came first (from then on it is not waiting
// for the name but for a reply to give up on).
type waitRec struct {
	h, proc  int
	seq      int
	read     bool
	names    []string
	n        int // permits it asks for (semaphores); 0: one
	from, to time.Duration
	res      string
}

// permitAsker is implemented by the handles of semaphores whose acquires
// ask for more than one permit.
type permitAsker interface{ asks() int }

// asks is how many permits an acquire of h asks for.
func asks(h handle) int {
	if a, ok := h.(permitAsker); ok {
		return a.asks()
	}
	return 1
}

// recordWait notes a blocking acquire that returned.
func (rn *run) recordWait(w waitRec) {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	rn.waits = append(rn.waits, w)
}

// sample reads the fault state and every name's state in Redis, at most
// once per sampleEvery and only while a blocking acquire is in flight;
// bubble tier only. It must be called with everything settled.
func (rn *run) sample() {
	now := rn.rec.now()
	if !rn.bubble || rn.waiting.Load() == 0 || (len(rn.samples) > 0 && now-rn.samples[len(rn.samples)-1].at < sampleEvery) {
		return
	}
	s := sample{at: now}
	s.calm, s.calmFrom = rn.ft.update(rn, now)
	if slices.Contains(s.calm, true) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		names, err := rn.namesState(ctx, rn.sampledNames())
		s.names, s.ok = names, err == nil
	}
	rn.samples = append(rn.samples, s)
}

// sampledNames are the names the handles lock.
func (rn *run) sampledNames() []string {
	if rn.names != nil {
		return rn.names
	}
	var ns []string
	for _, h := range rn.hs {
		for _, n := range h.names() {
			if !slices.Contains(ns, n) {
				ns = append(ns, n)
			}
		}
	}
	slices.Sort(ns)
	rn.names = ns
	return ns
}

// queueParts are the keys whose members wait in a queue, by primitive.
func queueParts(p primitive) []string {
	switch p.(type) {
	case rfairlockPrim:
		return []string{"alive"}
	case relectionPrim:
		return []string{"elect-alive"}
	case semPrim:
		return []string{"sem-alive"}
	}
	return nil
}

// namesState asks every server about names, in one round trip each.
func (rn *run) namesState(ctx context.Context, names []string) (map[string]nameState, error) {
	type cmds struct {
		lock           *redis.IntCmd
		leases, writer *redis.ZSliceCmd
		queue          []*redis.ZSliceCmd
		permits        *redis.MapStringStringCmd
		semLeases      *redis.ZSliceCmd
		semWaiting     *redis.MapStringStringCmd
	}
	out := make(map[string]nameState)
	qparts := queueParts(rn.prim)
	for _, a := range rn.w.admin {
		var now *redis.TimeCmd
		cs := make([]cmds, len(names))
		_, err := a.Pipelined(ctx, func(p redis.Pipeliner) error {
			now = p.Time(ctx)
			for i, n := range names {
				k := func(part string) string { return "rc:{" + n + "}:" + part }
				c := &cs[i]
				switch {
				case rn.c.capacity > 1:
					c.permits = p.HGetAll(ctx, k("permits"))
					c.semLeases = p.ZRangeWithScores(ctx, k("sem-leases"), 0, -1)
				case rn.c.read:
					c.leases = p.ZRangeWithScores(ctx, k("leases"), 0, -1)
					c.writer = p.ZRangeWithScores(ctx, k("writers"), 0, -1)
					fallthrough
				default:
					c.lock = p.Exists(ctx, k("lock"))
				}
				for _, q := range qparts {
					c.queue = append(c.queue, p.ZRangeWithScores(ctx, k(q), 0, -1))
				}
				if _, ok := rn.prim.(semPrim); ok {
					c.semWaiting = p.HGetAll(ctx, k("sem-waiting"))
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		nowMs := now.Val().UnixMilli()
		live := func(c *redis.ZSliceCmd) []string {
			var m []string
			if c == nil {
				return nil
			}
			for _, z := range c.Val() {
				if int64(z.Score) > nowMs {
					m = append(m, fmt.Sprint(z.Member))
				}
			}
			return m
		}
		for i, n := range names {
			c, ns := cs[i], out[n]
			ns.held = ns.held || (c.lock != nil && c.lock.Val() > 0)
			ns.reads += len(live(c.leases))
			ns.writers += len(live(c.writer))
			for _, q := range c.queue {
				for _, m := range live(q) {
					ns.queue = append(ns.queue, procOf(m))
					if c.semWaiting != nil {
						n, _ := strconv.Atoi(c.semWaiting.Val()[m])
						ns.queued += n
					}
				}
			}
			if c.permits != nil {
				p := c.permits.Val()
				if a, ok := p["a"]; ok {
					ns.avail, _ = strconv.Atoi(a)
				} else if t, ok := p["t"]; ok {
					total, _ := strconv.Atoi(t)
					ns.avail = total - len(live(c.semLeases))
				}
			}
			out[n] = ns
		}
	}
	return out, nil
}

// procOf is the process whose Client's id begins a queue entry (see
// determine), or -1.
func procOf(member string) int {
	if len(member) < 30 {
		return -1
	}
	n, err := strconv.ParseUint(member[:30], 16, 64)
	if err != nil {
		return -1
	}
	return int(n) - 1
}

// newFaultTrack follows np processes.
func newFaultTrack(np int) faultTrack {
	ft := faultTrack{active: make([]map[string]int, np), delays: make([][]time.Duration, np),
		drops: make([]int, np), seen: make([][2]int, np), calmFrom: make([]time.Duration, np)}
	for i := range np {
		ft.active[i] = make(map[string]int)
	}
	return ft
}

// update reads the fault events since the last sample and the processes'
// fault counters; it returns, per process, whether no fault of it is
// active, armed or in flight, and the instant from which its fault-free
// stretch may begin.
func (ft *faultTrack) update(rn *run, now time.Duration) (calm []bool, from []time.Duration) {
	np := len(rn.w.procs)
	if ft.active == nil {
		*ft = newFaultTrack(np)
	}
	rn.rec.mu.Lock()
	evs := slices.Clone(rn.rec.events[ft.next:])
	ft.next = len(rn.rec.events)
	rn.rec.mu.Unlock()
	for _, e := range evs {
		if e.kind != evFault {
			continue
		}
		ft.event(e, len(rn.w.admin))
	}
	if ft.back {
		ft.global = max(ft.global, now+calmMargin)
	}
	calm, from = make([]bool, np), make([]time.Duration, np)
	for i, p := range rn.w.procs {
		d, f := p.faults.Delayed(), p.faults.Fired()
		for range d - ft.seen[i][0] {
			if len(ft.delays[i]) > 0 {
				ft.calmFrom[i] = max(ft.calmFrom[i], now+ft.delays[i][0]+calmMargin)
				ft.delays[i] = ft.delays[i][1:]
			}
		}
		if f > ft.seen[i][1] {
			ft.drops[i] -= f - ft.seen[i][1]
			ft.calmFrom[i] = max(ft.calmFrom[i], now+calmMargin)
		}
		ft.seen[i] = [2]int{d, f}
		active := 0
		for _, n := range ft.active[i] {
			active += n
		}
		calm[i] = !ft.back && active == 0 && len(ft.delays[i]) == 0 && ft.drops[i] <= 0
		if !calm[i] {
			ft.calmFrom[i] = max(ft.calmFrom[i], now+calmMargin)
		}
		from[i] = max(ft.calmFrom[i], ft.global)
	}
	return calm, from
}

// lasting are the faults that stay in effect until an event "end of ...".
var lasting = []string{"deaf", "pause", "late messages"}

// event follows one fault event. A clock move is time passing, not a
// fault; "heal all" ends and disarms everything of its process.
func (ft *faultTrack) event(e event, servers int) {
	if strings.HasPrefix(e.what, "clock(") {
		return
	}
	p := e.proc
	if p < 0 || p >= len(ft.active) {
		ft.global = max(ft.global, e.at+calmMargin)
		return
	}
	ft.calmFrom[p] = max(ft.calmFrom[p], e.at+calmMargin)
	if strings.Contains(e.what, " net: ") {
		// The simulated network's faults last as long as what they hold
		// is in flight: a held or duplicated request, a delayed message,
		// a request dropped at a timeout (see simnet_test.go).
		if strings.ContainsRune(e.what, '(') {
			ft.calmFrom[p] = max(ft.calmFrom[p], e.at+parenDuration(e.what)+calmMargin)
		}
		return
	}
	for _, l := range lasting {
		switch {
		case strings.HasPrefix(e.what, "end of "+l):
			ft.active[p][l] = max(ft.active[p][l]-1, 0)
			return
		case strings.HasPrefix(e.what, l):
			ft.active[p][l]++
			return
		}
	}
	switch {
	case e.what == "heal all":
		clear(ft.active[p])
		ft.back, ft.delays[p], ft.drops[p] = false, nil, 0
	case strings.HasPrefix(e.what, "clock back"):
		ft.back = true
		ft.global = max(ft.global, e.at+calmMargin)
	case strings.HasPrefix(e.what, "delay("):
		ft.delays[p] = append(ft.delays[p], parenDuration(e.what))
	case strings.HasPrefix(e.what, "slow acquires("):
		for range servers {
			ft.delays[p] = append(ft.delays[p], parenDuration(e.what))
		}
	case strings.HasPrefix(e.what, "drop("):
		ft.drops[p]++
	}
}

// parenDuration is the duration in the first parentheses of s; when there
// is none, the longest delay drawn.
func parenDuration(s string) time.Duration {
	i, j := strings.IndexByte(s, '('), strings.IndexByte(s, ')')
	if i >= 0 && j > i {
		if d, err := time.ParseDuration(s[i+1 : j]); err == nil {
			return d
		}
	}
	return readTimeout + leaseTTL/2
}

// checkStranded runs the check over the run's waits and samples.
func (rn *run) checkStranded() []violation {
	return checkStranded(rn.c, rn.waits, rn.samples, rn.rec.holds, rn.maxLease())
}

// checkStranded flags, once per name, the first wait that stayed blocked
// for more than strandBound of a fault-free stretch in which what it asked
// for was free by every belief and by Redis, at every sample. longest is
// the longest lease a hold may have had (maxLease).
func checkStranded(c caps, waits []waitRec, samples []sample, holds []*holdRec, longest time.Duration) []violation {
	var out []violation
	flagged := make(map[string]bool)
	slices.SortStableFunc(waits, func(a, b waitRec) int { return int(a.from - b.from) })
	for _, w := range waits {
		if flagged[w.names[0]] {
			continue
		}
		start := time.Duration(-1)
		remnant := remnantEnd(w, holds, longest)
		for _, s := range samples {
			if s.at < w.from || s.at > w.to {
				continue
			}
			if s.at < remnant {
				start = -1
				continue
			}
			if w.proc >= len(s.calm) || !s.calm[w.proc] || !s.ok || !redisFree(c, w, s, waits) {
				start = -1
				continue
			}
			if start < 0 {
				start = max(s.at, w.from)
			}
			start = max(start, s.calmFrom[w.proc])
			var ok bool
			if start, ok = beliefFree(c, w, start, s.at, holds); !ok {
				start = -1
				continue
			}
			if s.at-start > strandBound {
				flagged[w.names[0]] = true
				out = append(out, violation{check: "liveness", name: w.names[0], at: s.at, seq: w.seq,
					msg: fmt.Sprintf("stranded waiter: h%d's acquire #%d waited from %.3fs to %.3fs, free and without faults, more than %v (it returned %q at %.3fs)",
						w.h, w.seq, start.Seconds(), s.at.Seconds(), strandBound, w.res, w.to.Seconds())})
				break
			}
		}
	}
	return out
}

// remnantEnd is when a hold of w's handle whose last Unlock failed may
// have ended, at the latest; 0 when there is none. Such a hold ends with
// its lease (see EndRelease in internal/hold), and the handle's next
// acquire waits for it at the handle's gate until then: a documented
// wait, not a stranded one. A renewed lease ends within half a TTL more
// than a TTL after the failure; a fixed lease, or one an Extend set, up to
// longest after it. An rrwlock handle's write hold holds its reads back
// too (a write hold whose Unlock failed, forced while its Client did not
// hear it, until its next renewal finds it gone).
func remnantEnd(w waitRec, holds []*holdRec, longest time.Duration) time.Duration {
	var end time.Duration
	for _, hr := range holds {
		if hr.h == w.h && (hr.read == w.read || !hr.read) && hr.unlockRet > 0 && hr.unlockRet <= w.to {
			end = max(end, hr.unlockRet+max(leaseTTL*3/2, longest)+calmMargin)
		}
	}
	return end
}

// redisFree reports whether Redis, at s, leaves w what it asks for: every
// name of w free (no write hold; for a writer no read lease, for a reader
// no waiting writer; for permits as many available, and enough for every
// live entry of a fair Semaphore's queue: a fair waiter behind a larger
// request that does not fit waits for it by design) and no queue entry
// ahead of it but those of processes that wait for the name too.
func redisFree(c caps, w waitRec, s sample, waits []waitRec) bool {
	for _, n := range w.names {
		ns, ok := s.names[n]
		if !ok {
			return false
		}
		switch {
		case c.capacity > 1 && (ns.avail < max(w.n, 1) || ns.avail < ns.queued):
			return false
		case c.capacity == 1 && ns.held:
			return false
		case w.read && ns.writers > 0:
			return false
		case c.read && !w.read && ns.reads > 0:
			return false
		}
		for _, p := range ns.queue {
			if !slices.ContainsFunc(waits, func(o waitRec) bool {
				return o.proc == p && o.from <= s.at && s.at < o.to && slices.Contains(o.names, n)
			}) {
				return false
			}
		}
	}
	return true
}

// beliefFree moves start past every belief in w's names that ended by at
// and reports false if one is still held at at: a write hold stands in
// every waiter's way, a read hold in a writer's, and on a semaphore holds
// that leave fewer permits than w asks for.
func beliefFree(c caps, w waitRec, start, at time.Duration, holds []*holdRec) (time.Duration, bool) {
	for _, n := range w.names {
		var in []*holdRec
		for _, hr := range holds {
			if !slices.Contains(hr.names, n) || hr.end <= start || hr.start > at || hr.end <= hr.start {
				continue
			}
			if w.read && hr.read {
				continue
			}
			in = append(in, hr)
		}
		if c.capacity > 1 {
			taken := max(w.n, 1)
			for _, hr := range in {
				taken += hr.weight()
			}
			if taken > c.capacity {
				return start, false
			}
			continue
		}
		for _, hr := range in {
			if hr.end > at {
				return start, false
			}
			start = max(start, hr.end)
		}
	}
	return start, true
}
