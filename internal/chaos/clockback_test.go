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
// explains by itself: the fence was deleted (a Forget returned, before the
// step back and after the earlier hold began, with no hold begun between
// it and the step) and the lagging clock then floored the next token.
func excuseClockBack(vs []violation, events []event, holds []*holdRec) []violation {
	var out []violation
	for _, v := range vs {
		if v.check != "fencing" || v.a == nil || !forgotThenStepped(v, events, holds) {
			out = append(out, v)
		}
	}
	return out
}

func forgotThenStepped(v violation, events []event, holds []*holdRec) bool {
	forgets := make(map[int]bool) // calls of Forget on v's name
	for _, e := range events {
		if e.kind == evCall && strings.HasPrefix(e.what, "Forget") && slices.Contains(e.names, v.name) {
			forgets[e.seq] = true
		}
	}
	for _, f := range events {
		if f.kind != evReturn || !forgets[f.seq] || f.res != "ok" || f.at < v.a.start {
			continue
		}
		for _, c := range events {
			if c.kind != evFault || !strings.HasPrefix(c.what, "clock back") || c.at < f.at || c.at > v.b.start {
				continue
			}
			between := false
			for _, hr := range holds {
				if slices.Contains(hr.names, v.name) && hr.start > f.at && hr.start < c.at {
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
