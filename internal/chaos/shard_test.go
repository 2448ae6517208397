package chaos

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The schedules of a primitive (TestChaos's, TestReplay's) are split into
// shards that run at once: the bubble tier runs on one P (guard_test.go),
// so one process uses one core. The test runs shard 0 itself and every
// other one in a child process, its own binary re-run for the one subtest
// with shardEnv set; a child prints each schedule's result on a line of its
// own (shardLine), and the parent reports them all in the order of their
// seeds, as if it had run them itself: the summary line, the violations
// and, with REDCOORD_CHAOS_VERBOSE, the histories. A schedule runs alike in
// either process, so its seed replays it (one seed runs in one process). A
// child that fails (a data race, a leaked goroutine, a schedule that made
// no progress) fails the subtest with its output, and a primitive with a
// shard that did not deliver every result prints no summary line.
// REDCOORD_CHAOS_SHARDS=<n> sets the number of shards; by default it is
// the number of CPUs, at most maxShards.

const (
	shardEnv  = "REDCOORD_CHAOS_SHARD" // "i/n": the child runs seeds s with (s-1)%n == i
	shardLine = "chaos-shard: "        // the prefix of a child's result lines
	maxShards = 4
)

// seedResult is what one schedule found, as a child passes it on.
type seedResult struct {
	Seed                 uint64
	Ops, Faults, Late    int
	LinNames, LinChecked int
	Checks, Known        []string // per violation: its check, the known finding it matches
	Reports              []string // per violation: its report
	Text                 string   // the history, with REDCOORD_CHAOS_VERBOSE
}

// runSchedules runs the schedules of one primitive (seeds 1..n, or only)
// and reports them: see the comment above.
func runSchedules(t *testing.T, name string, mk func(seed uint64) primitive, n int, only uint64) {
	seeds := make([]uint64, 0, n)
	for i := range n {
		seeds = append(seeds, uint64(i+1))
	}
	if only != 0 {
		seeds = []uint64{only}
	}
	verbose := os.Getenv("REDCOORD_CHAOS_VERBOSE") != ""
	all, whole, child := sharded(t, "TestChaos", name, len(seeds), func(i int) seedResult {
		seed := seeds[i]
		res := runBubble(t, name, seed, mk(seed), false, false)
		sr := seedResult{Seed: seed, Ops: res.ops, Faults: res.faults, Late: res.late,
			LinNames: res.lin.names, LinChecked: res.lin.checked, Known: res.known}
		for i, v := range res.violations {
			sr.Checks = append(sr.Checks, v.check)
			sr.Reports = append(sr.Reports, report(name, seed, v, res.events, res.known[i]))
		}
		if verbose {
			sr.Text = res.text
		}
		return sr
	})
	if child {
		return
	}
	var sum summary
	for _, sr := range all {
		res := result{ops: sr.Ops, faults: sr.Faults, late: sr.Late, known: sr.Known,
			lin: linCount{names: sr.LinNames, checked: sr.LinChecked}}
		for _, c := range sr.Checks {
			res.violations = append(res.violations, violation{check: c})
		}
		sum.add(res)
		if verbose {
			t.Logf("seed %d history:\n%s", sr.Seed, sr.Text)
		}
		for _, r := range sr.Reports {
			t.Errorf("%s", r)
		}
	}
	if whole {
		t.Logf("%s", sum.line(name))
	}
}

// sharded runs one(i) for i in 0..n-1, the subtest sub of test (t), over
// the shards: this process runs shard 0 and a child process each other
// one. It returns the results in the order of i, whether every shard
// delivered all of its own, and whether this process is a child (which
// prints its results, returns none, and must report nothing).
func sharded[T any](t *testing.T, test, sub string, n int, one func(i int) T) (all []T, whole, child bool) {
	part, parts, child, err := shardOf(n)
	if err != nil {
		t.Fatal(err)
	}
	type item struct {
		I int
		R T
	}
	var got []item
	run := func(part int) {
		for i := part; i < n; i += parts {
			r := one(i)
			if !child {
				got = append(got, item{i, r})
				continue
			}
			b, err := json.Marshal(item{i, r})
			if err != nil {
				t.Fatal(err)
			}
			fmt.Printf("%s%s\n", shardLine, b)
		}
	}
	if child {
		run(part)
		return nil, false, true
	}
	var kids []*shardChild
	for i := 1; i < parts; i++ {
		c, err := startShard(test, sub, i, parts)
		if err != nil {
			t.Fatalf("chaos: %s shard %d/%d: %v", sub, i, parts, err)
		}
		kids = append(kids, c)
	}
	run(0)
	whole = true
	for _, c := range kids {
		lines, err := c.wait()
		var mine int
		for _, l := range lines {
			var it item
			if jerr := json.Unmarshal([]byte(l), &it); jerr != nil {
				err = errors.Join(err, jerr)
				continue
			}
			got = append(got, it)
			mine++
		}
		want := (n - c.part + parts - 1) / parts
		whole = whole && mine == want
		if err != nil || mine != want {
			t.Errorf("chaos: %s shard %d/%d ran %d of its %d: %v\n%s", sub, c.part, parts, mine, want, err, c.rest)
		}
	}
	slices.SortFunc(got, func(a, b item) int { return cmp.Compare(a.I, b.I) })
	for _, it := range got {
		all = append(all, it.R)
	}
	return all, whole, false
}

// shardOf returns the shard this process runs of a primitive's seeds
// schedules, how many there are, and whether this process is a child.
func shardOf(seeds int) (part, parts int, child bool, err error) {
	if s := os.Getenv(shardEnv); s != "" {
		i, n, ok := strings.Cut(s, "/")
		part, err1 := strconv.Atoi(i)
		parts, err2 := strconv.Atoi(n)
		if !ok || err1 != nil || err2 != nil || part < 0 || part >= parts {
			return 0, 0, false, fmt.Errorf("%s=%q: want i/n, 0 <= i < n", shardEnv, s)
		}
		return part, parts, true, nil
	}
	parts = min(runtime.NumCPU(), maxShards)
	if s := os.Getenv("REDCOORD_CHAOS_SHARDS"); s != "" {
		if parts, err = strconv.Atoi(s); err != nil || parts < 1 {
			return 0, 0, false, fmt.Errorf("REDCOORD_CHAOS_SHARDS=%q: want a positive count", s)
		}
	}
	return 0, max(1, min(parts, seeds)), false, nil
}

// shardChild is a child process running one shard.
type shardChild struct {
	part int
	cmd  *exec.Cmd
	out  bytes.Buffer // its stdout and stderr
	rest string       // after wait: its output but the result lines
}

// startShard starts the child that runs shard part of parts of the
// subtest sub of test.
func startShard(test, sub string, part, parts int) (*shardChild, error) {
	args := []string{"-test.run", "^" + test + "$/^" + regexp.QuoteMeta(sub) + "$", "-test.count=1"}
	if f := flag.Lookup("test.timeout"); f != nil {
		args = append(args, "-test.timeout="+f.Value.String())
	}
	c := &shardChild{part: part, cmd: exec.Command(os.Args[0], args...)}
	c.cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d/%d", shardEnv, part, parts))
	c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
	return c, c.cmd.Start()
}

// wait waits for the child to exit and returns the result lines it
// printed, without their prefix.
func (c *shardChild) wait() ([]string, error) {
	err := c.cmd.Wait()
	var got []string
	var rest strings.Builder
	r := bufio.NewReader(&c.out)
	for {
		l, rerr := r.ReadString('\n')
		if s, ok := strings.CutPrefix(l, shardLine); ok {
			got = append(got, s)
		} else if l != "PASS\n" {
			rest.WriteString(l)
		}
		if rerr == io.EOF {
			break
		}
	}
	c.rest = rest.String()
	return got, err
}
