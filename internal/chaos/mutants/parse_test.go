//go:build mutants

package main

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// A run's output as the chaos suite prints it with -test.v: rlock failed
// two seeds, multi passed, relection hung on seed 4 (the guard's two
// lines), and the binary failed.
const sample = `=== RUN   TestChaos
=== RUN   TestChaos/rlock
    chaos_test.go:37: chaos: rlock seed=3 exclusivity on "n0" at 1.660s: h0/p0's hold began while ...
replay: REDCOORD_CHAOS_SEED=3 go test ./internal/chaos -run 'TestChaos/rlock$'
    chaos_test.go:37: chaos: rlock seed=3 fencing on "n1" at 1.700s: ...
    chaos_test.go:37: chaos: rlock seed=8 liveness on "n0" at 2.100s: ...
    chaos_test.go:40: chaos: rlock schedules=10 ops=253 faults=69 violations=3 (exclusivity=1 fencing=1 liveness=1), 0 of them known findings, first=3
=== RUN   TestChaos/multi
    chaos_test.go:40: chaos: multi schedules=10 ops=250 faults=60 late=7 violations=0 lin=2/10 (names 2/9)
=== RUN   TestChaos/relection
chaos: relection seed=4 has not ended after 2m0s of real time
panic: chaos: relection seed=4 made no progress
`

func TestParseAndJudge(t *testing.T) {
	runs := parse([]byte(sample))
	if len(runs) != 3 {
		t.Fatalf("parsed %d primitives, want 3", len(runs))
	}
	rl, multi, el := runs[0], runs[1], runs[2]
	if !rl.summarized || rl.violations != 3 || !slices.Equal(rl.seeds, []uint64{3, 8}) || rl.checks["fencing"] != 1 {
		t.Errorf("rlock: %+v", rl)
	}
	if !multi.summarized || multi.violations != 0 || len(multi.seeds) != 0 {
		t.Errorf("multi: %+v", multi)
	}
	if el.summarized || !slices.Equal(el.seeds, []uint64{4}) || el.checks["hang"] != 1 {
		t.Errorf("relection: %+v", el)
	}

	o := outcome{prims: runs}
	o.judge(errors.New("exit status 2"), nil)
	if o.status != statusKilled || o.first != "rlock 3" || o.seeds != 3 || o.violations != 3 {
		t.Errorf("judged %+v", o)
	}

	// Against a baseline that fails rlock's seeds too, only the hang kills.
	base := &outcome{prims: []*primRun{{name: "rlock", summarized: true, violations: 3, seeds: []uint64{3, 8}}}}
	o = outcome{prims: parse([]byte(sample))}
	o.judge(errors.New("exit status 2"), base)
	if o.status != statusKilled || o.first != "relection 4" || len(o.killedBy) != 1 {
		t.Errorf("judged against the baseline: %+v", o)
	}

	// Every failing seed fails in the baseline too, and the run ended: a
	// survivor.
	before, _, _ := strings.Cut(sample, "=== RUN   TestChaos/relection")
	o = outcome{prims: parse([]byte(before))}
	if n := len(o.prims); n != 2 {
		t.Fatalf("cut sample parsed %d primitives, want 2", n)
	}
	o.judge(errors.New("exit status 1"), base)
	if o.status != statusSurvived {
		t.Errorf("judged a baseline failure as %s (%s)", o.status, o.detail)
	}
}
