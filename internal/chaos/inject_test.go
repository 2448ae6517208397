package chaos

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redcoord/redcoord"
)

// Faults are injected through each process's redistest.Faults, which every
// connection of the process (to every server) goes through.

// isScript matches the commands that run the primitives' scripts.
func isScript(args []string) bool {
	switch args[0] {
	case "EVALSHA", "EVAL", "EVALSHA_RO", "EVAL_RO", "FCALL", "FCALL_RO":
		return true
	}
	return false
}

// inject sets off f now; faults that last are ended by healDue.
func (rn *run) inject(f faultStep) {
	rn.faults++
	p := rn.w.procs[f.proc]
	rn.rec.fault(f.proc, f.String())
	switch f.kind {
	case fDelay:
		// One per server: a RedLock call sends to every server at once,
		// and which of its scripts would take a single fault is the
		// scheduler's choice.
		for range p.clients {
			p.faults.DelayReply(isScript, f.d)
		}
	case fDrop:
		for range p.clients {
			p.faults.DropReply(isScript)
		}
	case fBreak:
		p.faults.CloseAll()
	case fDeaf:
		p.faults.Blackhole()
		rn.heals = append(rn.heals, heal{at: rn.rec.now() + f.d, proc: f.proc, kind: fDeaf})
	case fPause:
		p.faults.Stall()
		rn.heals = append(rn.heals, heal{at: rn.rec.now() + f.d, proc: f.proc, kind: fPause})
	case fClock:
		rn.settle()
		rn.sleep(f.d)
	default:
		rn.injectMore(f)
	}
	slices.SortStableFunc(rn.heals, func(a, b heal) int { return int(a.at - b.at) })
}

// healDue starts the network's faults at the first step, and ends the
// lasting faults whose time has come. A connection that
// swallowed bytes is out of step with its server, so it is broken too; the
// calls that breaking wakes run until they block before healDue returns.
func (rn *run) healDue() {
	rn.netOn()
	healed := false
	for len(rn.heals) > 0 && rn.heals[0].at <= rn.rec.now() {
		healed = true
		h := rn.heals[0]
		rn.heals = rn.heals[1:]
		if rn.healMore(h) {
			continue
		}
		p := rn.w.procs[h.proc]
		switch h.kind {
		case fDeaf:
			p.faults.Unblackhole()
		case fPause:
			p.faults.Unstall()
		}
		p.faults.CloseAll()
		rn.rec.fault(h.proc, "end of "+faultNames[h.kind])
	}
	if healed {
		rn.settle()
	}
}

// outcome says how a call ended, in words that do not depend on ids.
func outcome(ok bool, err error) string {
	switch {
	case err == nil && ok:
		return "ok"
	case err == nil:
		return "busy"
	case errors.Is(err, redcoord.ErrUpgrade):
		return "upgrade refused"
	case errors.Is(err, redcoord.ErrClosed):
		return "closed"
	case errors.Is(err, redcoord.ErrLeaseLost):
		return "lost"
	case errors.Is(err, redcoord.ErrNotHeld):
		return "not held"
	case errors.Is(err, redcoord.ErrNotAcquired):
		if strings.Contains(err.Error(), "context") {
			return "not acquired (ctx)"
		}
		return "not acquired"
	case errors.Is(err, errUnsupported):
		return "unsupported"
	}
	return "error: " + firstLine(err.Error())
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 80 {
		s = s[:80]
	}
	return s
}

func tokensText(tokens map[string]uint64) string {
	if len(tokens) == 0 {
		return ""
	}
	var names []string
	for n := range tokens {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, " %s=%d", n, tokens[n])
	}
	return " tok" + b.String()
}
