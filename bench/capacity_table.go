package main

import (
	"fmt"
	"slices"
)

// capacitySection is the capacity scenario's table: one line per lock and
// shape, the medians over the runs.
func capacitySection(r *results) *section {
	s := r.Settings
	t := &section{
		title: fmt.Sprintf("capacity: each worker on its own Client and its own lock name, "+
			"Lock+Unlock with no hold, as fast as it can; "+
			"%gs a cell, median of %d runs (cells one after another on one server)\n"+
			"  Redis CPU: used_cpu_user+used_cpu_sys of INFO cpu per cycle (min-max over the runs); "+
			"x redsync: over redsync's "+
			"in the same run and shape; cmdstat: INFO commandstats µs per cycle; script: µs per EVALSHA/FCALL; "+
			"allocs: the bench process's per cycle; n/a: the server gives none", s.DurationS, s.Runs),
		keys:  2,
		head1: "\t\t\tx redsync\tRedis CPU\tRedis CPU\tx redsync\tcmdstat\tscript\tround\t\t",
		head2: "workers\tlock\tcycles/s\trate\tµs/cycle\tmin-max\tCPU\tµs/cycle\tµs/call\ttrips\tallocs\t",
	}
	for _, w := range []int{1, s.CapWorkers} {
		for _, lock := range capacityKinds {
			m, ok := capacitySummary(r.Capacity, lock, w)
			if !ok {
				continue
			}
			t.add(lock, fmt.Sprintf("capacity %s, %d workers", lock, w), m.errors, m.sample,
				"%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%.1f\t",
				w, lock, rate(m.rate), ratio(m.xRate), na(m.cpu, "%.1f"), spread(m.cpuLo, m.cpuHi), ratio(m.xCPU),
				na(m.cmd, "%.1f"), na(m.script, "%.1f"), m.trips, m.allocs)
		}
	}
	return t
}

// na formats v, or "n/a" when it is unknown.
func na(v *float64, format string) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf(format, *v)
}

// ratio formats a ratio to redsync's, or "n/a".
func ratio(v *float64) string { return na(v, "%.2f") }

// spread formats a range, or "n/a".
func spread(lo, hi *float64) string {
	if lo == nil || hi == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.1f-%.1f", *lo, *hi)
}

// median returns the median of vs (the mean of the middle two for an even
// count); 0 for none.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// summary returns the median, least and greatest of vs; nil for none.
func summary(vs []float64) (med, lo, hi *float64) {
	if len(vs) == 0 {
		return nil, nil, nil
	}
	return ptr(median(vs)), ptr(slices.Min(vs)), ptr(slices.Max(vs))
}
