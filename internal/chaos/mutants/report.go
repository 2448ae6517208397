//go:build mutants

package main

import (
	"fmt"
	"strings"
	"time"
)

// report returns the markdown table of results: one row per mutant, then
// the counts by status.
func report(cfg config, results []outcome, base *outcome, check bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Mutants, %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	if check {
		b.WriteString("Mode: -check (each mutant applied and its package vetted; scripts loaded into Redis).\n\n")
		b.WriteString("| # | mutant | file | result | detail |\n|---|---|---|---|---|\n")
		for i, o := range results {
			fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", i+1, o.m.Name, o.m.File, o.status, o.detail)
		}
	} else {
		race := ""
		if cfg.race {
			race = ", -race"
		}
		fmt.Fprintf(&b, "Chaos suite: %d schedules per primitive%s; timeout %v per command.\n",
			cfg.schedules, race, cfg.timeout)
		if base != nil {
			fmt.Fprintf(&b, "Baseline (unmutated): %s%s, %d violations", base.status, suffix(base.detail), base.violations)
			for _, p := range base.prims {
				if len(p.seeds) > 0 {
					fmt.Fprintf(&b, "; %s fails seeds %v", p.name, p.seeds)
				}
			}
			b.WriteString(".\n")
		}
		b.WriteString("\n| # | mutant | file | result | killed by (checks) | first failing seed |" +
			" failing seeds | violations |")
		if cfg.pkgTests {
			b.WriteString(" pkg tests |")
		}
		b.WriteString(" time |\n|---|---|---|---|---|---|---|---|")
		if cfg.pkgTests {
			b.WriteString("---|")
		}
		b.WriteString("---|\n")
		for i, o := range results {
			fmt.Fprintf(&b, "| %d | %s | %s | %s%s | %s | %s | %s | %s |", i+1, o.m.Name, o.m.File, o.status, suffix(o.detail),
				strings.Join(o.killedBy, " "), o.first, count(o.seeds, o.status), count(o.violations, o.status))
			if cfg.pkgTests {
				fmt.Fprintf(&b, " %s |", o.pkg)
			}
			fmt.Fprintf(&b, " %v |\n", o.took.Round(time.Second))
		}
	}
	counts := map[string]int{}
	var order []string
	for _, o := range results {
		if counts[o.status] == 0 {
			order = append(order, o.status)
		}
		counts[o.status]++
	}
	b.WriteString("\n")
	for i, s := range order {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %d", s, counts[s])
	}
	fmt.Fprintf(&b, " (of %d).\n", len(results))
	if !check {
		b.WriteString("\nReplay a failing seed on the mutated copy (-keep): REDCOORD_CHAOS_SEED=<seed>" +
			" go test ./internal/chaos -run 'TestChaos/<primitive>$'\n")
	}
	return b.String()
}

// suffix returns detail in parentheses after a space, or "".
func suffix(detail string) string {
	if detail == "" {
		return ""
	}
	return " (" + detail + ")"
}

// count is n in a cell, blank for a mutant that did not run.
func count(n int, status string) string {
	if status != statusKilled && status != statusSurvived {
		return ""
	}
	return fmt.Sprint(n)
}
