package chaos

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
)

// The clock-back fault: a server's clock steps back by clockStep and stays
// behind for the rest of the steps with faults, as after a failover to a
// replica whose clock lags. Relative TTLs are not touched; what the server
// reads from its clock (TIME in the scripts: the floor of fencing tokens,
// registration deadlines) is behind. While the fence exists the next token
// is last + 1; a Forget that deletes it lets tokens start again from the
// lagging clock, below the last one handed out.

// clockStep is how far one clock-back fault moves a server's clock: more
// than a schedule lasts, so that every token handed out before it stays
// ahead of the clock.
const clockStep = time.Minute

// skew is a bubble server's clock offset; the zero value is no offset.
type skew struct {
	mu  sync.Mutex
	m   *miniredis.Miniredis
	off time.Duration // how far behind the bubble's clock the server's is
}

// clockBack moves server si's clock back by clockStep more. Every command
// the server runs from now on sets its clock first (a pre-hook), so that it
// goes on running, behind. It must be called with everything settled.
func (rn *run) clockBack(si int) {
	if !rn.bubble || si >= len(rn.w.servers) {
		return
	}
	m := rn.w.servers[si]
	// A server starts on its first dial: make sure it runs.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	_ = rn.w.admin[si].Ping(ctx).Err()
	cancel()
	if rn.wd.skews == nil {
		rn.wd.skews = make(map[int]*skew)
	}
	sk := rn.wd.skews[si]
	if sk == nil {
		sk = &skew{m: m}
		rn.wd.skews[si] = sk
	}
	sk.mu.Lock()
	sk.off += clockStep
	m.SetTime(time.Now().Add(-sk.off)) // a step back: no TTL runs out
	sk.mu.Unlock()
	m.Lock()
	srv := m.Server()
	m.Unlock()
	if srv != nil {
		srv.SetPreHook(func(*server.Peer, string, ...string) bool {
			// A script's own commands come through here too, with m's
			// lock held by the script: its clock was set when it began.
			if !m.TryLock() {
				return false
			}
			m.Unlock()
			sk.mu.Lock()
			defer sk.mu.Unlock()
			if sk.off > 0 {
				m.SetTime(time.Now().Add(-sk.off))
			}
			return false
		})
	}
}

// restoreClocks puts every server's clock back in step when faults stop:
// the clock jumps forward without running TTLs out (ClockTTL takes the new
// time as its baseline). It must be called with everything settled.
func (rn *run) restoreClocks() {
	for _, sk := range rn.wd.skews {
		sk.mu.Lock()
		sk.off = 0
		sk.m.Lock()
		srv := sk.m.Server()
		sk.m.Unlock()
		if srv != nil {
			srv.SetPreHook(nil)
		}
		sk.m.SetTime(time.Time{})
		sk.m.ClockTTL(true)
		sk.mu.Unlock()
	}
	rn.wd.skews = nil
}

// excuseClockBack drops the fencing violations that a clock stepped back
// explains by itself, as the package docs allow ("Fencing tokens" in
// doc.go: Forget deletes the counter, and tokens after that start again
// from the server's clock; a clock stepped back while the counter survives
// changes nothing, so only a deletion before the step explains one): a
// Forget may have deleted the fence after the earlier hold began and before
// the step back, with no hold begun between the deletion and the step, and
// the lagging clock then floored the next token.
func excuseClockBack(vs []violation, events []event, holds []*holdRec) []violation {
	var out []violation
	for _, v := range vs {
		if v.check != "fencing" || v.a == nil || !forgotThenStepped(v, events, holds) {
			out = append(out, v)
		}
	}
	return out
}

// forgotThenStepped reports whether a Forget of v's name that returned ok
// may have deleted the fence at a moment d after v's earlier hold began and
// before a step back of the clock (at or before v's later hold began), with
// no hold of the name begun between d and the step. Redis ran the Forget at
// some moment between its call and its return: a Forget whose reply came
// after the step (lost after Redis ran it, and answered by a retry) may
// have run just before the step, so d is the earlier of its return and the
// step. A Forget that Redis ran after the step refuses (the fence's last
// token is ahead of the lagging clock) and changes nothing.
func forgotThenStepped(v violation, events []event, holds []*holdRec) bool {
	forgets := make(map[int]time.Duration) // calls of Forget on v's name → when called
	for _, e := range events {
		if e.kind == evCall && strings.HasPrefix(e.what, "Forget") && slices.Contains(e.names, v.name) {
			forgets[e.seq] = e.at
		}
	}
	for _, f := range events {
		called, ok := forgets[f.seq]
		if f.kind != evReturn || !ok || f.res != "ok" {
			continue
		}
		for _, c := range events {
			if c.kind != evFault || !strings.HasPrefix(c.what, "clock back") || c.at < called || c.at > v.b.start {
				continue
			}
			d := min(f.at, c.at) // the latest moment the Forget may have deleted the fence before the step
			if d < v.a.start {
				continue
			}
			between := false
			for _, hr := range holds {
				if slices.Contains(hr.names, v.name) && hr.start > d && hr.start < c.at {
					between = true
				}
			}
			if !between {
				return true
			}
		}
	}
	return false
}
