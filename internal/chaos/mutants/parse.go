//go:build mutants

package main

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// primRun is what the chaos suite's output says of one primitive.
type primRun struct {
	name       string
	summarized bool // its summary line was printed: every schedule ended
	violations int  // the summary's count
	seeds      []uint64
	checks     map[string]int // failing reports by check ("hang": a schedule that made no progress)
}

var (
	runLine     = regexp.MustCompile(`^=== RUN\s+TestChaos/(\S+)`)
	summaryLine = regexp.MustCompile(`chaos: (\S+) schedules=\d+ ops=\d+ faults=\d+ (?:late=\d+ )?violations=(\d+)`)
	// a violation's report (chaos_test.go, report) or a schedule that
	// made no progress (guard_test.go)
	seedLine = regexp.MustCompile(`chaos: (\S+) seed=(\d+) (?:(\S+) on "|has not ended|made no progress)`)
)

// parse reads the per-primitive results from the chaos suite's -test.v
// output.
func parse(out []byte) []*primRun {
	var runs []*primRun
	get := func(name string) *primRun {
		for _, p := range runs {
			if p.name == name {
				return p
			}
		}
		p := &primRun{name: name, checks: map[string]int{}}
		runs = append(runs, p)
		return p
	}
	for _, l := range strings.Split(string(out), "\n") {
		if m := runLine.FindStringSubmatch(l); m != nil {
			get(m[1])
		}
		if m := summaryLine.FindStringSubmatch(l); m != nil {
			p := get(m[1])
			p.summarized = true
			p.violations, _ = strconv.Atoi(m[2])
		}
		if m := seedLine.FindStringSubmatch(l); m != nil {
			p := get(m[1])
			seed, _ := strconv.ParseUint(m[2], 10, 64)
			check := m[3]
			if check == "" {
				check = "hang"
			}
			if check == "hang" && slices.Contains(p.seeds, seed) && p.checks["hang"] > 0 {
				continue // its two lines, "has not ended" and the panic's
			}
			p.checks[check]++
			if !slices.Contains(p.seeds, seed) {
				p.seeds = append(p.seeds, seed)
			}
		}
	}
	return runs
}

// judge decides whether the run killed the mutant: a primitive with a
// failing seed that does not fail in the baseline (base, if run), a
// primitive that never printed its summary (a panic, a hang, a timeout),
// or a test binary that failed with no violation at all (a goroutine
// leak that TestMain's goleak found). err is the test binary's.
func (o *outcome) judge(err error, base *outcome) {
	var crashed []string
	for _, p := range o.prims {
		o.violations += p.violations
		fresh := p.seeds
		if b := base.prim(p.name); b != nil {
			fresh = slices.DeleteFunc(slices.Clone(p.seeds), func(s uint64) bool { return slices.Contains(b.seeds, s) })
		}
		if !p.summarized {
			crashed = append(crashed, p.name)
		}
		if len(fresh) == 0 && p.summarized {
			continue
		}
		o.killedBy = append(o.killedBy, p.name+checksOf(p))
		o.seeds += len(fresh)
		if len(fresh) > 0 && o.first == "" {
			o.first = fmt.Sprintf("%s %d", p.name, slices.Min(fresh))
		}
	}
	switch {
	case len(crashed) > 0 && err != nil:
		o.status, o.detail = statusKilled, "no summary from "+strings.Join(crashed, ", ")+": "+oneLine(err.Error())
	case len(o.killedBy) > 0:
		o.status = statusKilled
	case err != nil && o.violations == 0:
		o.status, o.detail = statusKilled, "test binary failed: "+oneLine(err.Error())
	case len(o.prims) == 0:
		o.status, o.detail = statusError, "no primitive ran"
	default:
		o.status = statusSurvived
		if o.violations > 0 {
			o.detail = "only seeds that fail in the baseline fail"
		}
	}
}

// prim returns the run of the primitive named name; nil if none, or o is
// nil.
func (o *outcome) prim(name string) *primRun {
	if o == nil {
		return nil
	}
	for _, p := range o.prims {
		if p.name == name {
			return p
		}
	}
	return nil
}

// checksOf says which checks failed, "(exclusivity=2 fencing=1)".
func checksOf(p *primRun) string {
	if len(p.checks) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(p.checks)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, p.checks[k]))
	}
	return "(" + strings.Join(parts, " ") + ")"
}
