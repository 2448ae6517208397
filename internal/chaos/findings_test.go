package chaos

import (
	"strings"
)

// known names the finding a violation's history matches, when one of the
// known ones does: it helps a reader sort a run's violations. It reads only
// the history; "" means none matched.
func known(v violation, rec *recorder, events []event) string {
	switch v.check {
	case "exclusivity", "counts":
		if a := v.a; a != nil && a.endHow == "open" {
			if at, ok := rec.closed[a.proc]; ok && at >= a.start && at <= v.at {
				return "after Client.Close, Lost and Context never end"
			}
		}
		if v.a != nil && called(events, v.a.seq, v.b.seq, "ForceUnlock") {
			return "a grant accepted after ForceUnlock"
		}
		if v.a != nil && called(events, v.a.seq, v.b.seq, "Resign") {
			return "a grant accepted after Resign"
		}
	case "fencing":
		if v.a != nil && v.a.h == v.b.h && v.a.tokens[v.name] == v.b.tokens[v.name] {
			return "a re-entry answered after loss becomes a fresh hold"
		}
		if v.a != nil && called(events, v.a.seq, v.b.seq, "Forget") {
			return "Forget sends tokens backwards"
		}
	case "liveness":
		if calledDone(events, "Unlock") || calledDone(events, "Resign") {
			return "Unlock with a done context keeps the lock"
		}
	case "leftover":
		if strings.Contains(v.msg, ":waiters") || strings.Contains(v.msg, ":alive") || strings.Contains(v.msg, ":queue") {
			return "registrations left behind after a lost reply"
		}
		if strings.Contains(v.msg, ":lock") && calledDone(events, "Unlock") {
			return "Unlock with a done context keeps the lock"
		}
	}
	return ""
}

// called reports whether an operation named what was called between the
// calls numbered from and to.
func called(events []event, from, to int, what string) bool {
	for _, e := range events {
		if e.kind == evCall && e.seq >= from && e.seq <= to && strings.HasPrefix(e.what, what) {
			return true
		}
	}
	return false
}

// calledDone reports whether an operation named what was called with a
// done context.
func calledDone(events []event, what string) bool {
	for _, e := range events {
		if e.kind == evCall && strings.HasPrefix(e.what, what) && strings.Contains(e.what, "ctx=done") {
			return true
		}
	}
	return false
}
