package main

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// pick parses a comma-separated subset of known ("all" in it for every
// one) and returns it in known's order, without repeats.
func pick(flagName, list string, known []string) ([]string, error) {
	var got []string
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "all" {
			got = append(got, known...)
			continue
		}
		if !slices.Contains(known, s) {
			return nil, fmt.Errorf("%s: unknown %q; want one of %s, or all", flagName, s, strings.Join(known, ", "))
		}
		got = append(got, s)
	}
	var out []string
	for _, k := range known {
		if slices.Contains(got, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

// numbers parses a comma-separated list of whole numbers, each a what from
// lo to hi, without repeats.
func numbers(flagName, list, what string, lo, hi int) ([]int, error) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < lo || n > hi {
			return nil, fmt.Errorf("%s: %q is not a %s from %d to %d", flagName, s, what, lo, hi)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// processes parses -procs: a comma-separated list of Client counts, each
// a whole number from 1 or "w" (returned as 0: one Client per worker),
// without repeats.
func processes(list string) ([]int, error) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		n := 0
		if s != "w" {
			var err error
			if n, err = strconv.Atoi(s); err != nil || n < 1 || n > 10000 {
				return nil, fmt.Errorf("-procs: %q is neither a Client count from 1 to 10000 nor w (one Client per worker)", s)
			}
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// procsFor returns how many Clients workers are spread over for the
// -procs entry p (0: one per worker).
func procsFor(p, workers int) int {
	if p == 0 || p > workers {
		return workers
	}
	return p
}

// flagSet reports whether the flag name was given.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// allBut returns the comma-separated list with each "all" in it spelled out
// as every scenario but those in except.
func allBut(list string, except ...string) string {
	var every []string
	for _, s := range scenarioNames {
		if !slices.Contains(except, s) {
			every = append(every, s)
		}
	}
	parts := strings.Split(list, ",")
	for i, s := range parts {
		if strings.TrimSpace(s) == "all" {
			parts[i] = strings.Join(every, ",")
		}
	}
	return strings.Join(parts, ",")
}
