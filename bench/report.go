package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"text/tabwriter"
	"time"
)

// results is everything a run measured: the JSON file, and what the table
// and the chart are drawn from.
type results struct {
	Backend     string       `json:"backend"`
	Started     time.Time    `json:"started"`
	Go          string       `json:"go"`
	CPUs        int          `json:"cpus"`
	Settings    settings     `json:"settings"`
	Legend      []legend     `json:"legend"`
	Mutex       []mutexRow   `json:"mutex,omitempty"`
	Seckill     []seckillRow `json:"seckill,omitempty"`
	NotYet      []string     `json:"not_yet_built,omitempty"` // scenarios whose primitives don't exist yet
	Interrupted bool         `json:"interrupted,omitempty"`   // Ctrl-C: the rows are the cells that finished

	short string // the backend, briefly: the chart's title
}

// settings are the flags a run ran with.
type settings struct {
	Scenarios   []string `json:"scenarios"`
	Workers     []int    `json:"workers"`
	Procs       int      `json:"procs"`
	HoldMs      float64  `json:"hold_ms"`
	DurationS   float64  `json:"duration_s"`
	PollMs      float64  `json:"poll_ms"`
	Orders      int      `json:"orders"`
	Concurrency int      `json:"concurrency"`
	Stock       int      `json:"stock"`
}

// legend says what one contender is.
type legend struct {
	Lock  string `json:"lock"`
	About string `json:"about"`
}

// newResults returns the results of a run of cfg on b, with no rows yet.
func newResults(cfg *config, b *backend) *results {
	r := &results{
		Backend: b.name,
		short:   b.short,
		Started: time.Now().UTC().Truncate(time.Second),
		Go:      runtime.Version(),
		CPUs:    runtime.NumCPU(),
		Settings: settings{
			Scenarios: cfg.scenarios, Workers: cfg.workers, Procs: cfg.procs,
			HoldMs: msOf(cfg.hold), DurationS: cfg.duration.Seconds(), PollMs: msOf(cfg.poll),
			Orders: cfg.orders, Concurrency: cfg.concurrency, Stock: cfg.stock,
		},
	}
	for _, ct := range contenders(cfg) {
		r.Legend = append(r.Legend, legend{ct.name, ct.about})
	}
	return r
}

// msOf is d in milliseconds.
func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// writeTable prints r as text tables.
func writeTable(out io.Writer, r *results) error {
	fmt.Fprintf(out, "backend: %s\n", r.Backend)
	s := r.Settings
	if len(r.Mutex) > 0 {
		fmt.Fprintf(out, "\nmutex: one lock name, each worker holds it %gms; %gs a cell; workers spread over %d processes\n",
			s.HoldMs, s.DurationS, s.Procs)
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "lock\tworkers\tacq/s\twait p50 ms\tp99 ms\tmax ms\tstarved\thand-off p50 µs\tround trips/acq\tJain\tFIFO viol.\tME viol.\terrors\t")
		for _, m := range r.Mutex {
			fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.2f\t%.1f\t%.1f\t%d\t%s\t%.2f\t%.3f\t%d\t%d\t%d\t\n",
				m.Lock, m.Workers, m.AcqPerSec, m.WaitP50, m.WaitP99, m.WaitMax, m.Starved, gap(m),
				m.RoundTrips, m.Jain, m.FIFO, m.ME, m.Errors)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, m := range r.Mutex {
			if m.ErrorSample != "" {
				fmt.Fprintf(out, "  %s, %d workers, first error: %s\n", m.Lock, m.Workers, m.ErrorSample)
			}
		}
	}
	if len(r.Seckill) > 0 {
		fmt.Fprintf(out, "\nseckill: %d orders, %d at a time, %d in stock\n", s.Orders, s.Concurrency, s.Stock)
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "lock\torders/s\tsold\tsold out\tfailed\tlatency p50 ms\tp99 ms\tmax ms\tround trips/order\toversold\terrors\t")
		for _, k := range r.Seckill {
			fmt.Fprintf(tw, "%s\t%.0f\t%d\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.2f\t%d\t%d\t\n",
				k.Lock, k.OrdersPerS, k.Sold, k.SoldOut, k.Failed, k.LatencyP50, k.LatencyP99, k.LatencyMax,
				k.RoundTrips, k.Oversold, k.Errors)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, k := range r.Seckill {
			if k.ErrorSample != "" {
				fmt.Fprintf(out, "  %s, first error: %s\n", k.Lock, k.ErrorSample)
			}
		}
	}
	if len(r.Mutex)+len(r.Seckill) > 0 {
		fmt.Fprintln(out, "\nlocks:")
		ran := map[string]bool{}
		for _, m := range r.Mutex {
			ran[m.Lock] = true
		}
		for _, k := range r.Seckill {
			ran[k.Lock] = true
		}
		for _, l := range r.Legend {
			if ran[l.Lock] {
				fmt.Fprintf(out, "  %-10s %s\n", l.Lock, l.About)
			}
		}
	}
	for _, n := range r.NotYet {
		fmt.Fprintf(out, "\n%s: not yet built; this scenario runs once its primitive lands\n", n)
	}
	if r.Interrupted {
		fmt.Fprintln(out, "\ninterrupted: the rows above are the cells that finished")
	}
	return nil
}

// violations lists what must never happen: two workers inside a lock at
// once, an item sold twice under a lock.
func (r *results) violations() []string {
	var out []string
	for _, m := range r.Mutex {
		if m.ME > 0 {
			out = append(out, fmt.Sprintf("%s, %d workers: %d mutual-exclusion violations", m.Lock, m.Workers, m.ME))
		}
	}
	for _, k := range r.Seckill {
		if k.Lock != "none" && k.Oversold != 0 {
			out = append(out, fmt.Sprintf("seckill %s: oversold %d", k.Lock, k.Oversold))
		}
	}
	return out
}

// gap formats a row's hand-off gap, or "-" when no waiter was handed the lock.
func gap(m mutexRow) string {
	if m.Gaps == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", m.GapP50)
}

// writeJSON prints r as indented JSON.
func writeJSON(out io.Writer, r *results) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// writeFiles writes results.json, and waits.svg when there are mutex rows,
// into dir, creating it. It returns the paths written.
func writeFiles(dir string, r *results) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	write := func(name string, f func(io.Writer) error) error {
		p := filepath.Join(dir, name)
		fh, err := os.Create(p)
		if err != nil {
			return err
		}
		if err := f(fh); err != nil {
			fh.Close()
			return fmt.Errorf("%s: %w", p, err)
		}
		paths = append(paths, p)
		return fh.Close()
	}
	if err := write("results.json", func(w io.Writer) error { return writeJSON(w, r) }); err != nil {
		return paths, err
	}
	if hasAcquisitions(r.Mutex) {
		title := "redcoord bench on " + r.short
		if err := write("waits.svg", func(w io.Writer) error { return writeChart(w, r.Mutex, title) }); err != nil {
			return paths, err
		}
	}
	return paths, nil
}

// hasAcquisitions reports whether any row has something to chart.
func hasAcquisitions(rows []mutexRow) bool {
	for _, m := range rows {
		if m.Acquisitions > 0 {
			return true
		}
	}
	return false
}
