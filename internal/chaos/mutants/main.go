//go:build mutants

// Command mutants is redcoord's mutation-testing harness: it plants one
// small deliberate bug (a mutant, listed in mutants.go) at a time in a
// copy of the repository, runs the chaos suite's bubble tier against it,
// and reports which mutants the suite kills. The caller's working tree is
// never written: each mutant gets a temporary copy of it.
//
//	go run -tags mutants ./internal/chaos/mutants -list
//	go run -tags mutants ./internal/chaos/mutants -check
//	go run -tags mutants ./internal/chaos/mutants -only lock-renew-owner-only -schedules 20
//
// The build tag keeps it out of go build, go vet and go test ./... . See
// README.md for how to add a mutant and how to read the table.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// config is what the flags ask for.
type config struct {
	root      string        // the repository copied for each mutant
	schedules int           // REDCOORD_CHAOS_SCHEDULES
	race      bool          // build with -race
	pkgTests  bool          // also run the mutated package's tests
	allPrims  bool          // run every primitive, not only the mutant's
	timeout   time.Duration // per mutant, per go command
	keep      bool          // keep the temporary copies
	logs      string        // folder of each mutant's full output
}

func main() {
	var (
		cfg      config
		list     = flag.Bool("list", false, "list the mutants and exit")
		check    = flag.Bool("check", false, "only apply each mutant and vet the mutated package (Lua: load every script)")
		only     = flag.String("only", "", "comma-separated mutant names to run (default: all)")
		jobs     = flag.Int("j", 1, "mutants run at once")
		out      = flag.String("out", "", "file the markdown table is written to (default: in the OS temp folder)")
		baseline = flag.Bool("baseline", false, "run the unmutated copy first; seeds that fail there do not count as kills")
	)
	flag.StringVar(&cfg.root, "repo", "", "the repository to copy (default: the git top level of the current folder)")
	flag.IntVar(&cfg.schedules, "schedules", 100, "chaos schedules per primitive (REDCOORD_CHAOS_SCHEDULES)")
	flag.BoolVar(&cfg.race, "race", false, "build the chaos suite with -race")
	flag.BoolVar(&cfg.pkgTests, "pkgtests", false, "also run the tests of the mutated file's package")
	flag.BoolVar(&cfg.allPrims, "allprims", false, "run every primitive, not only those a mutant names")
	flag.DurationVar(&cfg.timeout, "timeout", 20*time.Minute, "bound of each go command a mutant runs")
	flag.BoolVar(&cfg.keep, "keep", false, "keep each mutant's temporary copy (its path is logged)")
	flag.Parse()
	if flag.NArg() > 0 || *jobs < 1 || cfg.schedules < 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := validate(mutants); err != nil {
		fatal(err)
	}
	if *list {
		printList(mutants)
		return
	}
	sel, err := selectMutants(mutants, *only)
	if err != nil {
		fatal(err)
	}
	if cfg.root == "" {
		b, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
		if err != nil {
			fatal(fmt.Errorf("finding the repository (give -repo): %w", err))
		}
		cfg.root = strings.TrimSpace(string(b))
	}
	stamp := time.Now().UTC().Format("20060102-150405")
	if *out == "" {
		*out = filepath.Join(os.TempDir(), "redcoord-mutants-"+stamp+".md")
	}
	cfg.logs = strings.TrimSuffix(*out, ".md") + ".logs"
	if err := os.MkdirAll(cfg.logs, 0o755); err != nil {
		fatal(err)
	}
	fmt.Fprintf(os.Stderr, "mutants: %d selected; logs in %s\n", len(sel), cfg.logs)

	var base *outcome
	if *baseline && !*check {
		fmt.Fprintf(os.Stderr, "mutants: baseline (unmutated)\n")
		b := runOne(cfg, mutant{Name: "baseline"}, false, nil)
		if b.status == statusSurvived {
			b.status = "passes"
		}
		base = &b
		fmt.Fprintf(os.Stderr, "mutants: baseline: %s %s\n", b.status, b.detail)
	}
	results := make([]outcome, len(sel))
	var wg sync.WaitGroup
	next := make(chan int)
	for range *jobs {
		wg.Go(func() {
			for i := range next {
				results[i] = runOne(cfg, sel[i], *check, base)
				fmt.Fprintf(os.Stderr, "mutants: %-34s %s %s (%v)\n", sel[i].Name, results[i].status, results[i].detail,
					results[i].took.Round(time.Second))
			}
		})
	}
	for i := range sel {
		next <- i
	}
	close(next)
	wg.Wait()

	table := report(cfg, results, base, *check)
	fmt.Print(table)
	if err := os.WriteFile(*out, []byte(table), 0o644); err != nil {
		fatal(err)
	}
	fmt.Fprintf(os.Stderr, "mutants: table written to %s\n", *out)
}

// validate rejects a list that cannot be run as written: a name used
// twice, a mutant that changes nothing, a primitive the suite lacks.
func validate(ms []mutant) error {
	seen := map[string]bool{}
	for _, m := range ms {
		switch {
		case m.Name == "" || m.File == "" || m.Old == "" || m.Breaks == "":
			return fmt.Errorf("mutant %q: name, file, old text and what it breaks are all required", m.Name)
		case seen[m.Name]:
			return fmt.Errorf("mutant %q is listed twice", m.Name)
		case m.Old == m.New:
			return fmt.Errorf("mutant %q changes nothing", m.Name)
		}
		seen[m.Name] = true
		for _, p := range m.Prims {
			if !slices.Contains(primitives, p) {
				return fmt.Errorf("mutant %q names primitive %q, which the chaos suite does not drive", m.Name, p)
			}
		}
	}
	return nil
}

// selectMutants returns the mutants named in only (all when it is empty),
// in the list's order.
func selectMutants(ms []mutant, only string) ([]mutant, error) {
	if only == "" {
		return ms, nil
	}
	want := map[string]bool{}
	for _, n := range strings.Split(only, ",") {
		want[strings.TrimSpace(n)] = true
	}
	var sel []mutant
	for _, m := range ms {
		if want[m.Name] {
			sel = append(sel, m)
			delete(want, m.Name)
		}
	}
	if len(want) > 0 {
		var names []string
		for n := range want {
			names = append(names, n)
		}
		slices.Sort(names)
		return nil, fmt.Errorf("no mutant named %s (see -list)", strings.Join(names, ", "))
	}
	return sel, nil
}

// printList prints each mutant: its name, file, primitives and what it
// breaks.
func printList(ms []mutant) {
	for _, m := range ms {
		prims := "all"
		if len(m.Prims) > 0 {
			prims = strings.Join(m.Prims, ",")
		}
		fmt.Printf("%-34s %-32s [%s]\n    %s\n", m.Name, m.File, prims, m.Breaks)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "mutants:", err)
	os.Exit(1)
}
