package main

import (
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/core"
)

// lock reads the lock hash (rlock, rfairlock, rrwlock's writer, the
// election's leader) and the fence.
func (d *decoded) lock() {
	d.fence(core.KeyFence)
	h := d.hash(core.KeyLock)
	if h == nil {
		return
	}
	kind := h["k"]
	d.st.addKind(kind)
	if h["o"] == "" {
		return
	}
	role := map[string]string{core.Rrwlock: "writer", core.Relection: "leader"}[kind]
	if role == "" {
		role = "holder"
	}
	hd := Holder{Role: role, Owner: h["o"], Client: clientOf(h["o"]), Count: parseInt(h["c"]),
		Token: parseUint(h["t"]), RemainingMS: max(0, d.pttl(core.KeyLock))}
	if kind == core.Relection {
		hd.Value = h["m"] // the leader's metadata is the value it proclaims
	} else {
		hd.meta(h["m"])
	}
	if a := parseInt(h["a"]); a > 0 {
		t := time.UnixMilli(a).UTC()
		hd.AcquiredAt = &t
	}
	d.st.Token = max(d.st.Token, hd.Token)
	d.st.Holders = append(d.st.Holders, hd)
}

// meta fills what the holder metadata m (msgpack, core.Meta) says.
func (h *Holder) meta(m string) {
	if m == "" {
		return
	}
	md := core.DecodeMeta([]byte(m))
	if md.Client != "" {
		h.Client = md.Client
	}
	h.Host, h.PID, h.Value, h.Fixed = md.Host, md.PID, md.Value, md.Fixed
	h.LeaseMS = md.Lease.Milliseconds()
}

// fairQueue reads a fair queue's three keys (rfairlock's, or the
// election's candidates'): the requests in order, each with its heartbeat,
// its age and what a grant to it would give.
func (d *decoded) fairQueue(q, a, w core.Part, kind string) {
	ids := d.list(q)
	alive := d.zset(a)
	grants := d.hash(w)
	if len(ids) == 0 && len(alive) == 0 {
		return
	}
	d.st.addKind(kind)
	deadline := map[string]float64{}
	for _, z := range alive {
		deadline[z.Member.(string)] = z.Score
	}
	for _, req := range ids {
		wt := Waiter{Request: req, Owner: ownerOf(req), HeartbeatMS: d.remaining(deadline[req])}
		wt.Client = clientOf(wt.Owner)
		d.joined(&wt, grants)
		if g, ok := grants[req]; ok {
			lease, m, _ := strings.Cut(g, " ")
			wt.LeaseMS = parseInt(lease)
			if kind != core.Relection { // a candidate's metadata is its value
				var h Holder
				h.meta(m)
				wt.Host, wt.PID = h.Host, h.PID
			}
		}
		if wt.HeartbeatMS > 0 {
			d.st.Waiting++
		}
		d.st.Queue = append(d.st.Queue, wt)
	}
}

// joined sets when wt joined its queue and its age, from the queue's
// waiting hash w: "@<request id>" → server time in ms (scripts/queue_lib.lua).
// A request queued by a version that kept no time has no such field, and
// gets neither.
func (d *decoded) joined(wt *Waiter, w map[string]string) {
	ms := parseInt(w["@"+wt.Request])
	if ms <= 0 {
		return
	}
	t, age := time.UnixMilli(ms).UTC(), max(0, d.nowMS-ms)
	wt.JoinedAt, wt.AgeMS = &t, &age
}

// registry reads a registry of Clients to wake (a zset: client id →
// heartbeat deadline); count adds its live Clients to Waiting, for the
// kinds whose waiters are known only by their Client's registration.
func (d *decoded) registry(p core.Part, kind string, count bool) {
	regs := d.zset(p)
	if len(regs) == 0 {
		return
	}
	d.st.addKind(kind)
	for _, z := range regs {
		r := Registration{Key: core.Describe(p).Part, Client: z.Member.(string), HeartbeatMS: d.remaining(z.Score)}
		if count && r.HeartbeatMS > 0 {
			d.st.Waiting++
		}
		d.st.Registrations = append(d.st.Registrations, r)
	}
}

// readers reads rrwlock's read holds and waiting writers.
func (d *decoded) readers() {
	holds := d.hash(core.KeyReaders)
	leases := d.zset(core.KeyReadLeases)
	if holds != nil || len(leases) > 0 {
		d.st.addKind(core.Rrwlock)
	}
	for _, z := range leases {
		o := z.Member.(string)
		left := d.remaining(z.Score)
		if left <= 0 {
			continue // lapsed: the next script drops it
		}
		_, fixed := holds["x:"+o]
		d.st.Holders = append(d.st.Holders, Holder{Role: "reader", Owner: o, Client: clientOf(o),
			Count: parseInt(holds[o]), Value: holds["v:"+o], Fixed: fixed, RemainingMS: left})
	}
	for _, z := range d.zset(core.KeyWriters) {
		d.st.addKind(core.Rrwlock)
		o := z.Member.(string)
		wt := Waiter{Owner: o, Client: clientOf(o), HeartbeatMS: d.remaining(z.Score)}
		if wt.HeartbeatMS > 0 {
			d.st.Waiting++
		}
		d.st.WaitingWriters = append(d.st.WaitingWriters, wt)
	}
	d.registry(core.KeyWriterWaiters, core.Rrwlock, false)
}

// semaphore reads the permits hash, the fair queue and registries of
// Semaphore, and ExpirableSemaphore's leases.
func (d *decoded) semaphore() {
	h := d.hash(core.KeyPermits)
	if h != nil {
		d.st.addKind(h["k"])
		d.st.Permits = &Permits{Total: parseInt(h["t"]), Available: parseInt(h["a"])}
	}
	d.semQueue()
	d.registry(core.KeySemWaiters, core.Rsemaphore, true)
	sizes := map[string]int64{}
	for _, z := range d.zset(core.KeySemSizes) {
		sizes[z.Member.(string)] = int64(z.Score)
	}
	for i, r := range d.st.Registrations {
		if r.Key == core.Describe(core.KeySemWaiters).Part {
			d.st.Registrations[i].Smallest = sizes[r.Client]
		}
	}
	d.fence(core.KeySemFence)
	tokens := d.hash(core.KeyTokens)
	live := int64(0)
	for _, z := range d.zset(core.KeySemLeases) {
		d.st.addKind(core.Expirable)
		id := z.Member.(string)
		left := d.remaining(z.Score)
		if left <= 0 {
			continue // lapsed: the permit is back
		}
		live++
		_, fixed := tokens["f:"+id]
		d.st.Holders = append(d.st.Holders, Holder{Role: "permit", Owner: id, Client: clientOf(ownerOf(id)),
			Token: parseUint(tokens[id]), Fixed: fixed, RemainingMS: left})
	}
	if h != nil && h["k"] == core.Expirable {
		d.st.Permits.Available = d.st.Permits.Total - live
	}
	d.registry(core.KeyXSemWaiters, core.Expirable, true)
}

// semQueue reads Semaphore's fair queue.
func (d *decoded) semQueue() {
	ids := d.list(core.KeySemQueue)
	alive := d.zset(core.KeySemAlive)
	asks := d.hash(core.KeySemWaiting)
	if len(ids) == 0 && len(alive) == 0 {
		return
	}
	d.st.addKind(core.Rsemaphore)
	deadline := map[string]float64{}
	for _, z := range alive {
		deadline[z.Member.(string)] = z.Score
	}
	for _, req := range ids {
		wt := Waiter{Request: req, Owner: ownerOf(req), Permits: parseInt(asks[req]),
			HeartbeatMS: d.remaining(deadline[req])}
		wt.Client = clientOf(wt.Owner)
		d.joined(&wt, asks)
		if wt.HeartbeatMS > 0 {
			d.st.Waiting++
		}
		d.st.Queue = append(d.st.Queue, wt)
	}
}

// others reads the latch, the rate limiter and the election's log.
func (d *decoded) others() {
	if h := d.hash(core.KeyLatch); h != nil {
		d.st.addKind(core.Rlatch)
		d.st.Latch = &Latch{Count: parseInt(h["c"]), Round: parseInt(h["g"])}
	}
	if h := d.hash(core.KeyRate); h != nil {
		d.st.addKind(core.Ratelimit)
		r := &Rate{Events: parseInt(h["e"]), PeriodMS: parseInt(h["p"]) / 1000, Burst: parseInt(h["b"]),
			Set: h["s"] == "1"}
		if tat := parseInt(h["t"]); tat > 0 {
			r.AheadMS = max(0, tat/1000-d.nowMS)
		}
		d.st.Rate = r
	}
	if !d.ok(core.KeyElectLog) {
		return
	}
	for _, m := range d.rd.cmds[core.KeyElectLog][0].(*redis.XMessageSliceCmd).Val() {
		d.st.Terms = append(d.st.Terms, Term{Term: parseUint(str(m.Values["t"])), Value: str(m.Values["v"]),
			Since: time.UnixMilli(parseInt(str(m.Values["a"]))).UTC()})
	}
}

func parseInt(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

func parseUint(s string) uint64 {
	n, _ := strconv.ParseUint(s, 10, 64)
	return n
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
