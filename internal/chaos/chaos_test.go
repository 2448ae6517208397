package chaos

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
)

// TestChaos runs the bubble tier: for every primitive, schedules seeds 1..n
// (or the one REDCOORD_CHAOS_SEED names), each in a synctest bubble of its
// own (shard_test.go), and prints one summary line per primitive.
func TestChaos(t *testing.T) {
	n, only, err := schedules()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range primitives {
		t.Run(p.name, func(t *testing.T) { runSchedules(t, p.name, p.make, n, only) })
	}
}

// result is what one schedule did and found.
type result struct {
	ops, faults int
	late        int // requests delivered after a request sent later
	violations  []violation
	events      []event
	text        string
	known       []string // per violation: the known finding it matches, or ""
	lin         linCount
}

// runBubble runs one schedule of p, named name, in a synctest bubble of its
// own, on one P and under the real-time bound (guard_test.go); yield sets
// the driver's yield (see isBusy), sound keeps the simulated network from
// faulting (see TestReplay).
func runBubble(t *testing.T, name string, seed uint64, p primitive, yield, sound bool) result {
	defer oneP()()
	var pr progress
	defer watch(name, seed, &pr)()
	var res result
	synctest.Test(t, func(t *testing.T) {
		c := p.caps()
		w, err := newBubbleWorld(c.servers, procsPerSchedule, []string{"n0", "n1", "n2"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.close()
		if err := p.setup(context.Background(), w); err != nil {
			t.Fatal(err)
		}
		rn := newRun(seed, p, w, true)
		rn.yield, rn.sound = yield, sound
		pr.set(rn.rec)
		rn.drive()
		rn.wg.Wait()
		rn.rec.finish()
		res = rn.result()
	})
	return res
}

// result runs the checkers over the finished history.
func (rn *run) result() result {
	netFaults, late := rn.netCounts()
	res := result{ops: rn.ops, faults: rn.faults + netFaults, late: late, events: rn.rec.sorted(), text: rn.rec.text()}
	res.violations = append(res.violations, rn.violations...)
	res.violations = append(res.violations, checkHolds(rn.c, rn.rec.holds, rn.windows)...)
	if rn.c.fenced {
		res.violations = append(res.violations, excuseClockBack(checkFencing(rn.c, rn.rec.holds, rn.windows), res.events, rn.rec.holds)...)
	}
	res.violations = append(res.violations, rn.checkProbes(res.events)...)
	res.violations = append(res.violations, rn.checkStranded()...)
	lin, lv := checkLin(rn.c, rn.rec.holds, res.events)
	res.lin = lin
	res.violations = append(res.violations, lv...)
	for _, v := range res.violations {
		res.known = append(res.known, cmp.Or(known(v, rn.rec, res.events), moreKnown(v)))
	}
	return res
}

// report is what a failing schedule prints: how to replay it, what broke,
// and the shortest history that shows it.
func report(prim string, seed uint64, v violation, events []event, known string) string {
	if known != "" {
		known = "\nmatches the known finding: " + known
	}
	return fmt.Sprintf("chaos: %s seed=%d %s on %q at %.3fs: %s%s\nreplay: REDCOORD_CHAOS_SEED=%d go test ./internal/chaos -run 'TestChaos/%s$'\n%s",
		prim, seed, v.check, v.name, v.at.Seconds(), v.msg, known, seed, prim, shortHistory(events, v))
}

// summary counts a primitive's schedules.
type summary struct {
	schedules, ops, faults, violations int
	late                               int // requests delivered after a request sent later
	first                              int // the number of the first schedule with a violation; 0: none
	byCheck, byKnown                   map[string]int
	lin                                linCount // names with holds and of them checked, over all schedules
	linSchedules                       int      // schedules with a name checked
}

func (s *summary) add(r result) {
	s.schedules++
	if s.first == 0 && len(r.violations) > 0 {
		s.first = s.schedules
	}
	s.ops += r.ops
	s.faults += r.faults
	s.late += r.late
	s.violations += len(r.violations)
	s.lin.names += r.lin.names
	s.lin.checked += r.lin.checked
	if r.lin.checked > 0 {
		s.linSchedules++
	}
	for i, v := range r.violations {
		if s.byCheck == nil {
			s.byCheck, s.byKnown = make(map[string]int), make(map[string]int)
		}
		s.byCheck[v.check]++
		if r.known[i] != "" {
			s.byKnown[r.known[i]]++
		}
	}
}

func (s summary) line(prim string) string {
	l := fmt.Sprintf("chaos: %s schedules=%d ops=%d faults=%d late=%d violations=%d", prim, s.schedules, s.ops, s.faults, s.late, s.violations)
	if s.lin.names > 0 {
		l += fmt.Sprintf(" lin=%d/%d (names %d/%d)", s.linSchedules, s.schedules, s.lin.checked, s.lin.names)
	}
	if len(s.byCheck) > 0 {
		var parts []string
		for _, k := range []string{"exclusivity", "counts", "fencing", "liveness", "leftover", "proclaim", "wake", "linearizability", "unlock", "holdcount", "vanish", "reentry", "validity", "force"} {
			if s.byCheck[k] > 0 {
				parts = append(parts, fmt.Sprintf("%s=%d", k, s.byCheck[k]))
			}
		}
		l += " (" + strings.Join(parts, " ") + ")"
		known := 0
		for _, n := range s.byKnown {
			known += n
		}
		l += fmt.Sprintf(", %d of them known findings, first=%d", known, s.first)
	}
	return l
}
