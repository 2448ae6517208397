package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The checkers: each reads the recorded holds (and, for liveness and
// leftovers, what the driver saw) and returns the violations it finds.

type violation struct {
	check string // "exclusivity", "fencing", "counts", "liveness", "leftover", "proclaim"
	name  string
	at    time.Duration // the instant it shows
	seq   int           // the earliest operation involved: the history starts at its call
	msg   string
	a, b  *holdRec // the holds involved, earlier first, where there are two
}

// window is a fault after which the package docs allow an earlier holder to
// go on believing it holds, until its Lost closes, for at most grace: a
// ForceUnlock (the holder learns at its next renewal), a restart without
// persistence (the holder's renewal finds the hold gone).
type window struct {
	name     string        // "" for every name
	from, to time.Duration // when the fault was set off and when it was done
	grace    time.Duration
	what     string
}

// excused reports whether a's belief overlapping a hold begun at b is one a
// window allows: a ended (by Lost, or by a release that came first) within
// the grace of a window that opened between a's start and b. A hold that
// ended by Lost starts, for this, when its acquire was called: Redis may
// have granted it before the fault (a force, a restart) and the reply
// come after, and its Lost then tells the holder, as for any hold forced.
func excused(a *holdRec, b time.Duration, name string, ws []window) bool {
	if a.endHow == "open" {
		return false
	}
	began := a.start
	if a.endHow == "lost" {
		began = min(began, a.called)
	}
	for _, w := range ws {
		if (w.name == "" || w.name == name) && began <= w.to && w.from <= b && a.end <= w.to+w.grace {
			return true
		}
	}
	return false
}

// checkHolds is exclusivity and counts: at no instant do handles believe
// they hold more than capacity of a name for writing (a hold of several
// permits counts each), or a writer and a reader at once. Intervals are half-open: a belief that ends at the instant another
// begins does not overlap it.
func checkHolds(c caps, holds []*holdRec, ws []window) []violation {
	check := "exclusivity"
	if c.capacity > 1 {
		check = "counts"
	}
	var out []violation
	for _, name := range holdNames(holds) {
		var hs []*holdRec
		for _, hr := range holds {
			if slices.Contains(hr.names, name) && hr.end > hr.start {
				hs = append(hs, hr)
			}
		}
		slices.SortStableFunc(hs, func(a, b *holdRec) int { return cmp.Compare(a.start, b.start) })
		for i, b := range hs {
			writers, readers := 0, 0
			var with []*holdRec
			for _, a := range hs[:i] {
				if a.end <= b.start || a.h == b.h || excused(a, b.start, name, ws) || excusedLate(b, name, ws) {
					continue
				}
				with = append(with, a)
				if a.read {
					readers++
				} else {
					writers += a.weight()
				}
			}
			if b.read {
				readers++
			} else {
				writers += b.weight()
			}
			if writers > c.capacity || (writers > 0 && readers > 0) {
				seq, first := b.seq, with[0]
				var who []string
				for _, a := range with {
					seq = min(seq, a.seq)
					d := describeHold(a)
					if a.unlockAt > 0 && a.unlockAt <= b.start && (a.unlockRet == 0 || a.unlockRet > b.start) {
						d += fmt.Sprintf(" (its Unlock in flight since %.3fs)", a.unlockAt.Seconds())
					}
					who = append(who, d)
				}
				out = append(out, violation{check: check, name: name, at: b.start, seq: seq,
					msg: fmt.Sprintf("%s began while %s", describeHold(b), strings.Join(who, ", ")), a: first, b: b})
				break // the first is the one to read
			}
		}
	}
	return out
}

// checkFencing: of two holds of a name whose beliefs do not overlap, the
// later one has the higher token, so a store that keeps the highest token
// it saw accepts the newer holder and refuses the older one. A read hold
// (rrwlock) carries the name's last token, so it may equal the one before.
// A handle whose release failed (a done context) goes on holding: the same
// token again is that hold, not a new one. A hold whose acquire was
// answered after a window (a ForceUnlock) ended it, and whose Lost then
// told its holder (excusedLate), may carry a token below a hold granted
// after the window: a store refuses that holder, as it should.
func checkFencing(c caps, holds []*holdRec, ws []window) []violation {
	if c.capacity > 1 {
		return checkDistinct(holds)
	}
	var out []violation
	for _, name := range holdNames(holds) {
		var hs []*holdRec
		for _, hr := range holds {
			if hr.tokens[name] != 0 && hr.end > hr.start {
				hs = append(hs, hr)
			}
		}
		slices.SortStableFunc(hs, func(a, b *holdRec) int { return cmp.Compare(a.start, b.start) })
	pairs:
		for j, b := range hs {
			for _, a := range hs[:j] {
				ta, tb := a.tokens[name], b.tokens[name]
				if a.end > b.start || tb > ta || (b.read && tb == ta) {
					continue // overlapping, or in order (a read hold shares the last token)
				}
				if a.h == b.h && ta == tb && a.endHow == "unlock" {
					continue // a release that failed: the hold went on
				}
				if excusedLate(b, name, ws) {
					continue
				}
				{
					out = append(out, violation{check: "fencing", name: name, at: b.start, seq: a.seq,
						msg: fmt.Sprintf("%s has token %d, not above %d of %s before it",
							describeHold(b), b.tokens[name], a.tokens[name], describeHold(a)), a: a, b: b})
					break pairs
				}
			}
		}
	}
	return out
}

// weight is how much of its name's capacity hr takes: its permits.
func (hr *holdRec) weight() int { return max(hr.permits, 1) }

func describeHold(hr *holdRec) string {
	kind := "hold"
	switch {
	case hr.read:
		kind = "read hold"
	case hr.permits > 1:
		kind = fmt.Sprintf("hold of %d", hr.permits)
	}
	return fmt.Sprintf("h%d/p%d's %s #%d [%.3fs, %.3fs %s)", hr.h, hr.proc, kind, hr.seq,
		hr.start.Seconds(), hr.end.Seconds(), hr.endHow)
}

func holdNames(holds []*holdRec) []string {
	var names []string
	for _, hr := range holds {
		for _, n := range hr.names {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return names
}

// shortHistory is what a failure prints: the events of v's name (and every
// fault) from the call of the earliest operation involved to the
// violation, at most maxLines of them, the last ones.
func shortHistory(events []event, v violation) string {
	const maxLines = 30
	namesOf := make(map[int][]string)
	var from time.Duration = -1
	for _, e := range events {
		if e.kind == evCall {
			namesOf[e.seq] = e.names
			if e.seq == v.seq {
				from = e.at
			}
		}
	}
	var lines []string
	for _, e := range events {
		if e.at < from || e.at > v.at {
			continue
		}
		if e.kind == evFault || v.name == "" || slices.Contains(namesOf[e.seq], v.name) || strings.HasPrefix(e.what, "Client.Close") {
			lines = append(lines, e.String())
		}
	}
	if len(lines) > maxLines {
		lines = append([]string{fmt.Sprintf("   ... %d earlier events", len(lines)-maxLines)}, lines[len(lines)-maxLines:]...)
	}
	return strings.Join(lines, "\n")
}

// checkDistinct is fencing where holds may coexist (permits): the order in
// which beliefs begin need not be the order in which Redis granted them, so
// only this is checked: no two fresh holds of a name share a token.
func checkDistinct(holds []*holdRec) []violation {
	var out []violation
	seen := make(map[string]*holdRec)
	for _, hr := range holds {
		for name, tok := range hr.tokens {
			k := fmt.Sprintf("%s/%d", name, tok)
			if a := seen[k]; a != nil && tok != 0 && a.h != hr.h {
				out = append(out, violation{check: "fencing", name: name, at: hr.start, seq: a.seq,
					msg: fmt.Sprintf("%s has token %d, as %s has", describeHold(hr), tok, describeHold(a)), a: a, b: hr})
			}
			seen[k] = hr
		}
	}
	return out
}
