package main

import (
	"fmt"
	"io"
	"slices"
)

// writeTable prints r as text tables.
func writeTable(out io.Writer, r *results) error {
	fmt.Fprintf(out, "backend: %s\n", r.Backend)
	s := r.Settings
	mutexNames, mutexWhat := namesOf(r.Mutex, "one lock name", "worker i on lock name i mod names")
	mutex := section{
		title: fmt.Sprintf("mutex: %s, each worker holds it %gms; %gs a cell; "+
			"clients: the Clients the workers are spread over"+
			"\n  all Clients run in this process; round trips and server µs are per acquisition"+
			"\n  FIFO viol.: a worker served before one that began waiting earlier (expected of unfair locks)"+
			"\n  ME viol.: mutual-exclusion violations, two workers inside at once (must be 0)",
			mutexWhat, s.HoldMs, s.DurationS),
		keys:  3 + mutexNames.n(),
		head1: "\t\t\t" + mutexNames.head1() + "\twait\twait\twait\t\thand-off\tround\tserver\t\tFIFO\tME\t",
		head2: "lock\tworkers\tclients\t" + mutexNames.head() +
			"acq/s\tp50 ms\tp99 ms\tmax ms\tstarved\tp50 µs\ttrips\tµs\tJain\tviol.\tviol.\t",
	}
	for _, m := range r.Mutex {
		mutex.add(m.Lock, fmt.Sprintf("%s, %d workers on %s", m.Lock, m.Workers, clients(m.Procs)),
			m.Errors, m.ErrorSample,
			"%s\t%d\t%d\t%s%s\t%.2f\t%.1f\t%.1f\t%d\t%s\t%.2f\t%s\t%.3f\t%d\t%d\t",
			m.Lock, m.Workers, m.Procs, mutexNames.cell(m.common), rate(m.AcqPerSec),
			m.WaitP50, m.WaitP99, m.WaitMax, m.Starved, gap(m),
			m.RoundTrips, micros(m.ServerUs), m.Jain, m.FIFO, m.ME)
	}
	rw := section{
		title: fmt.Sprintf("rwlock: one lock name; "+
			"each acquisition a read (RLock) or a write (Lock) as the mix draws, held %gms; "+
			"%gs a cell; clients: the Clients the workers are spread over"+
			"\n  all Clients run in this process; rlock, the baseline, takes reads as writes; "+
			"x rlock: acq/s over rlock's at the same mix, workers and clients; "+
			"round trips and server µs are per acquisition", s.HoldMs, s.DurationS),
		keys:  4,
		head1: "\t\t\t\t\tx\twait\twait\twait\twrite\t\tround\tserver\tmax\tME\t",
		head2: "mix\tlock\tworkers\tclients\tacq/s\trlock\tp50 ms\tp99 ms\tmax ms\tp99 ms\t" +
			"starved\ttrips\tµs\treaders\tviol.\t",
	}
	for _, m := range r.RWLock {
		rw.add(m.Lock, fmt.Sprintf("%s %s, %d workers on %s", m.Mix, m.Lock, m.Workers, clients(m.Procs)),
			m.Errors, m.ErrorSample,
			"%s\t%s\t%d\t%d\t%s\t%s\t%.2f\t%.1f\t%.1f\t%.1f\t%d\t%.2f\t%s\t%d\t%d\t",
			m.Mix, m.Lock, m.Workers, m.Procs, rate(m.AcqPerSec), times(m.XRlock), m.WaitP50, m.WaitP99, m.WaitMax,
			m.WriteWaitP99, m.Starved, m.RoundTrips, micros(m.ServerUs), m.MaxReaders, m.ME)
	}
	semNames, semWhat := namesOf(r.Semaphore, "one semaphore", "worker i on semaphore i mod names, each")
	sem := section{
		title: fmt.Sprintf("semaphore: %s of %d permits; each worker takes 1, holds it %gms; %gs a cell; "+
			"clients: the Clients the workers are spread over"+
			"\n  all Clients run in this process; round trips and server µs are per acquisition; "+
			"max inside: the most workers holding a permit at once, as the harness saw them; "+
			"limit viol.: more than the permits inside",
			semWhat, s.Permits, s.HoldMs, s.DurationS),
		keys:  3 + semNames.n(),
		head1: "\t\t\t" + semNames.head1() + "\twait\twait\twait\t\tround\tserver\t\tmax\tFIFO\tlimit\t",
		head2: "lock\tworkers\tclients\t" + semNames.head() +
			"acq/s\tp50 ms\tp99 ms\tmax ms\tstarved\ttrips\tµs\tJain\tinside\tviol.\tviol.\t",
	}
	for _, m := range r.Semaphore {
		sem.add(m.Lock, fmt.Sprintf("semaphore %s, %d workers on %s", m.Lock, m.Workers, clients(m.Procs)),
			m.Errors, m.ErrorSample,
			"%s\t%d\t%d\t%s%s\t%.2f\t%.1f\t%.1f\t%d\t%.2f\t%s\t%.3f\t%d\t%d\t%d\t",
			m.Lock, m.Workers, m.Procs, semNames.cell(m.common), rate(m.AcqPerSec), m.WaitP50, m.WaitP99, m.WaitMax, m.Starved,
			m.RoundTrips, micros(m.ServerUs), m.Jain, m.MaxInside, m.FIFO, m.OverLimit)
	}
	seckill := section{
		title: fmt.Sprintf("seckill: %d orders, %d at a time, %d in stock; round trips and server µs are per order",
			s.Orders, s.Concurrency, s.Stock),
		keys:  2,
		head1: "\t\t\t\tsold\t\tlatency\tlatency\tlatency\tround\tserver\t\t",
		head2: "lock\tclients\torders/s\tsold\tout\tfailed\tp50 ms\tp99 ms\tmax ms\ttrips\tµs\toversold\t",
	}
	for _, k := range r.Seckill {
		seckill.add(k.Lock, fmt.Sprintf("%s on %s", k.Lock, clients(k.Procs)), k.Errors, k.ErrorSample,
			"%s\t%d\t%.0f\t%d\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.2f\t%s\t%d\t",
			k.Lock, k.Procs, k.OrdersPerS, k.Sold, k.SoldOut, k.Failed, k.LatencyP50, k.LatencyP99, k.LatencyMax,
			k.RoundTrips, micros(k.ServerUs), k.Oversold)
	}
	rateLimit := rateSection(r)
	ran := map[string]bool{}
	for _, t := range []*section{&mutex, &rw, &sem, &seckill, &rateLimit, capacitySection(r)} {
		if err := t.print(out, ran); err != nil {
			return err
		}
	}
	if len(ran) > 0 {
		fmt.Fprintln(out, "\nlocks:")
		width := 10
		for _, l := range r.Legend {
			if ran[l.Lock] {
				width = max(width, len(l.Lock))
			}
		}
		for _, l := range r.Legend {
			if ran[l.Lock] {
				fmt.Fprintf(out, "  %-*s %s\n", width, l.Lock, l.About)
			}
		}
	}
	if r.Interrupted {
		fmt.Fprintln(out, "\ninterrupted: the rows above are the cells that finished")
	}
	return nil
}

// namesColumn says whether a section has a names column: whether any of
// its rows spread its workers over several names.
type namesColumn bool

// namesOf returns the names column of rows, and one or spread, whichever
// says how their workers share the lock, for the section's title.
func namesOf[R row](rows []R, one, spread string) (namesColumn, string) {
	if slices.ContainsFunc(rows, func(m R) bool { return m.figures().Names > 0 }) {
		return true, spread
	}
	return false, one
}

// n is how many columns it is: 0 or 1.
func (on namesColumn) n() int {
	if !on {
		return 0
	}
	return 1
}

// head1 is the column's upper header row, empty, with its tab; "" for no
// column.
func (on namesColumn) head1() string {
	if !on {
		return ""
	}
	return "\t"
}

// head is the column's header, with its tab; "" for no column.
func (on namesColumn) head() string {
	if !on {
		return ""
	}
	return "names\t"
}

// cell is row c's cell, with its tab; "" for no column.
func (on namesColumn) cell(c common) string {
	if !on {
		return ""
	}
	return fmt.Sprintf("%d\t", max(c.Names, 1))
}

// gap formats a row's hand-off gap, or "-" when no waiter was handed the lock.
func gap(m mutexRow) string {
	if m.Gaps == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", m.GapP50)
}

// rate formats a rate per second: whole above 10, to a tenth below (a
// long -hold gives a fraction of one per second).
func rate(v float64) string {
	if v >= 10 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// micros formats a server time per acquisition, or "-" when it is unknown.
func micros(us *float64) string {
	if us == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *us)
}

// times formats a ratio to a baseline, or "-" when there is none.
func times(x float64) string {
	if x == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", x)
}
