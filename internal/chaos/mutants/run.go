//go:build mutants

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// What became of a mutant.
const (
	statusKilled   = "killed"
	statusSurvived = "survived"
	statusNoApply  = "does not apply"
	statusNoBuild  = "does not compile"
	statusChecked  = "applies, compiles" // -check
	statusError    = "harness error"
)

// outcome is what one mutant's run found.
type outcome struct {
	m      mutant
	status string
	detail string
	prims  []*primRun // in the order run
	// killedBy names the primitives whose runs killed it, with their
	// checks; first is the first failing seed ("<primitive> <seed>");
	// seeds counts the failing seeds that killed it (beyond the
	// baseline's), violations every violation reported.
	killedBy   []string
	first      string
	seeds      int
	violations int
	pkg        string // -pkgtests: "pass", "FAIL", or "" when not run
	took       time.Duration
}

// runOne copies the repository, plants m (none for the baseline, whose
// File is empty), and either checks that it compiles (check) or runs the
// chaos suite against it, and with cfg.pkgTests its package's tests.
// base, if not nil, is the baseline's outcome: seeds that fail there do
// not kill.
func runOne(cfg config, m mutant, check bool, base *outcome) (o outcome) {
	o.m = m
	start := time.Now()
	defer func() { o.took = time.Since(start) }()
	fail := func(status string, err error) outcome {
		o.status, o.detail = status, oneLine(err.Error())
		return o
	}
	dir, err := os.MkdirTemp("", "redcoord-mutant-")
	if err != nil {
		return fail(statusError, err)
	}
	if cfg.keep {
		fmt.Fprintf(os.Stderr, "mutants: %s: copy kept in %s\n", m.Name, dir)
	} else {
		defer os.RemoveAll(dir)
	}
	log, err := os.Create(filepath.Join(cfg.logs, m.Name+".log"))
	if err != nil {
		return fail(statusError, err)
	}
	defer log.Close()
	if err := copyTree(cfg.root, dir); err != nil {
		return fail(statusError, err)
	}
	if m.File != "" {
		if err := apply(dir, m); err != nil {
			var na errNoApply
			if errors.As(err, &na) {
				return fail(statusNoApply, err)
			}
			return fail(statusError, err)
		}
	}
	if check {
		if out, err := vetMutant(cfg, dir, m, log); err != nil {
			return fail(statusNoBuild, fmt.Errorf("%s", firstError(out, err)))
		}
		o.status = statusChecked
		return o
	}

	build := []string{"test", "-c", "-trimpath", "-o", filepath.Join(dir, "chaos.test")}
	if cfg.race {
		build = append(build, "-race")
	}
	if out, err := goCmd(cfg, dir, log, nil, append(build, "./internal/chaos/")...); err != nil {
		return fail(statusNoBuild, fmt.Errorf("%s", firstError(out, err)))
	}
	prims := m.Prims
	if len(prims) == 0 || cfg.allPrims {
		prims = primitives
	}
	if m.File == "" {
		prims = primitives // the baseline runs every primitive a mutant may ask for
	}
	env := []string{"REDCOORD_CHAOS_SCHEDULES=" + strconv.Itoa(cfg.schedules), "REDCOORD_CHAOS_SEED=",
		"REDCOORD_CHAOS_VERBOSE="}
	args := []string{"-test.run", "^TestChaos$/^(" + strings.Join(prims, "|") + ")$", "-test.v", "-test.count=1",
		"-test.timeout=" + (cfg.timeout + time.Minute).String()}
	out, err := runCmd(cfg.timeout, filepath.Join(dir, "internal", "chaos"), log, env,
		filepath.Join(dir, "chaos.test"), args...)
	o.prims = parse(out)
	o.judge(err, base)
	if cfg.pkgTests && m.File != "" {
		o.pkg = "pass"
		test := []string{"test", "-count=1", "-trimpath"}
		if cfg.race {
			test = append(test, "-race")
		}
		if _, err := goCmd(cfg, dir, log, nil, append(test, pkgOf(m))...); err != nil {
			o.pkg = "FAIL"
			if o.status == statusSurvived {
				o.status, o.detail = statusKilled, "by "+pkgOf(m)+" tests only"
			}
		}
	}
	return o
}

// vetMutant checks that the mutated copy at dir compiles: go vet of the
// mutated file's package, or for a script, the test that loads every
// script into Redis (a Lua syntax error fails there).
func vetMutant(cfg config, dir string, m mutant, log io.Writer) ([]byte, error) {
	if strings.HasSuffix(m.File, ".lua") {
		return goCmd(cfg, dir, log, nil, "test", "-count=1", "-trimpath", "-run", "^TestEveryScriptComposes$",
			"./internal/scripts/")
	}
	return goCmd(cfg, dir, log, nil, "vet", "-trimpath", pkgOf(m))
}

// goCmd runs the go command in dir, bounded by cfg.timeout.
func goCmd(cfg config, dir string, log io.Writer, env []string, args ...string) ([]byte, error) {
	return runCmd(cfg.timeout, dir, log, env, "go", args...)
}

// runCmd runs name with args in dir, with env added to this process's,
// bounded by timeout; its output goes to log too, after the command line.
func runCmd(timeout time.Duration, dir string, log io.Writer, env []string, name string,
	args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 10 * time.Second
	var buf bytes.Buffer
	fmt.Fprintf(log, "$ %s %s\n", name, strings.Join(args, " "))
	cmd.Stdout = io.MultiWriter(&buf, log)
	cmd.Stderr = cmd.Stdout
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %v", timeout)
	}
	fmt.Fprintf(log, "# exit: %v\n\n", err)
	return buf.Bytes(), err
}

// firstError returns what a failed command's output says of why: a
// Redis error (a script that does not compile), else its first two lines
// that are not the test runner's, else err.
func firstError(out []byte, err error) string {
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		l = strings.TrimSpace(l)
		if i := strings.Index(l, "ERR "); i >= 0 {
			return l[i:]
		}
		if l == "" || len(lines) == 2 || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "FAIL") ||
			strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "---") || strings.HasPrefix(l, "===") {
			continue
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		return err.Error()
	}
	return strings.Join(lines, "; ")
}

// oneLine makes s fit in a table cell.
func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "|", "/")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}
