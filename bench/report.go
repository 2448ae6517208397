package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"
)

// results is everything a run measured: the JSON file, and what the table
// and the chart are drawn from.
type results struct {
	Backend     string        `json:"backend"`
	Started     time.Time     `json:"started"`
	Go          string        `json:"go"`
	CPUs        int           `json:"cpus"`
	Settings    settings      `json:"settings"`
	Legend      []legend      `json:"legend"`
	Mutex       []mutexRow    `json:"mutex,omitempty"`
	RWLock      []rwRow       `json:"rwlock,omitempty"`
	Semaphore   []semRow      `json:"semaphore,omitempty"`
	Seckill     []seckillRow  `json:"seckill,omitempty"`
	RateLimit   []rateRow     `json:"ratelimit,omitempty"`
	Capacity    []capacityRow `json:"capacity,omitempty"`    // one per run of each cell
	Interrupted bool          `json:"interrupted,omitempty"` // Ctrl-C: the rows are the cells that finished

	short string // the backend, briefly: the chart's title
}

// settings are the flags a run ran with.
type settings struct {
	Scenarios   []string `json:"scenarios"`
	Workers     []int    `json:"workers"`
	Mixes       []int    `json:"mixes_read_pct"`
	Permits     int      `json:"permits"`
	Procs       []int    `json:"procs"` // -procs: Client counts; 0: one Client per worker
	HoldMs      float64  `json:"hold_ms"`
	DurationS   float64  `json:"duration_s"`
	PollMs      float64  `json:"poll_ms"`
	Orders      int      `json:"orders"`
	Concurrency int      `json:"concurrency"`
	Stock       int      `json:"stock"`
	Runs        int      `json:"runs,omitempty"`             // capacity
	CapWorkers  int      `json:"capacity_workers,omitempty"` // capacity
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
			Scenarios: cfg.scenarios, Workers: cfg.workers, Mixes: cfg.mixes, Permits: cfg.permits, Procs: cfg.procs,
			HoldMs: msOf(cfg.hold), DurationS: cfg.duration.Seconds(), PollMs: msOf(cfg.poll),
			Orders: cfg.orders, Concurrency: cfg.concurrency, Stock: cfg.stock,
		},
	}
	if slices.Contains(cfg.scenarios, "capacity") {
		r.Settings.Runs, r.Settings.CapWorkers = cfg.runs, cfg.capWorkers
	}
	cts := contenders(cfg)
	if slices.Contains(cfg.scenarios, "rwlock") {
		cts = append(cts, rwContenders(cfg)...)
	}
	if slices.Contains(cfg.scenarios, "semaphore") {
		cts = append(cts, semContenders(cfg)...)
	}
	if slices.Contains(cfg.scenarios, "ratelimit") {
		for _, name := range rateNames {
			cts = append(cts, contender{name: name, about: rateAbout[name]})
		}
	}
	if slices.Contains(cfg.scenarios, "capacity") {
		cts = append(cts, capacityContenders(cfg)...)
	}
	for _, ct := range cts {
		if !slices.ContainsFunc(r.Legend, func(l legend) bool { return l.Lock == ct.name }) {
			r.Legend = append(r.Legend, legend{ct.name, ct.about})
		}
	}
	return r
}

// msOf is d in milliseconds.
func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// violations lists what must never happen: a writer inside a lock with
// anyone else, a reader with a writer, more workers inside a semaphore than
// its permits, an item sold twice under a lock.
func (r *results) violations() []string {
	var out []string
	for _, m := range r.Mutex {
		if m.ME > 0 {
			out = append(out, fmt.Sprintf("%s, %d workers on %s: %d mutual-exclusion violations",
				m.Lock, m.Workers, clients(m.Procs), m.ME))
		}
	}
	for _, m := range r.RWLock {
		if m.ME > 0 {
			out = append(out, fmt.Sprintf("rwlock %s %s, %d workers on %s: %d mutual-exclusion violations",
				m.Mix, m.Lock, m.Workers, clients(m.Procs), m.ME))
		}
	}
	for _, m := range r.Semaphore {
		if m.OverLimit > 0 {
			out = append(out, fmt.Sprintf(
				"semaphore %s, %d workers on %s: %d over-limit violations (more than %d inside at once)",
				m.Lock, m.Workers, clients(m.Procs), m.OverLimit, m.Permits))
		}
	}
	for _, k := range r.Seckill {
		if k.Lock != "none" && k.Oversold != 0 {
			out = append(out, fmt.Sprintf("seckill %s on %s: oversold %d", k.Lock, clients(k.Procs), k.Oversold))
		}
	}
	return out
}

// writeJSON prints r as indented JSON.
func writeJSON(out io.Writer, r *results) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// writeFiles writes results.json, and waits.svg, rwlock.svg and
// semaphore.svg when there are mutex, rwlock and semaphore rows to chart,
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
	title := "redcoord bench on " + r.short
	if hasAcquisitions(r.Mutex) {
		if err := write("waits.svg", func(w io.Writer) error { return writeChart(w, r.Mutex, title) }); err != nil {
			return paths, err
		}
	}
	if hasAcquisitions(r.RWLock) {
		rwTitle := "rwlock: " + title
		if err := write("rwlock.svg", func(w io.Writer) error { return writeRWChart(w, r.RWLock, rwTitle) }); err != nil {
			return paths, err
		}
	}
	if hasAcquisitions(r.Semaphore) {
		semTitle := fmt.Sprintf("semaphore, %d permits: %s", r.Settings.Permits, title)
		err := write("semaphore.svg", func(w io.Writer) error { return writeChart(w, r.Semaphore, semTitle) })
		if err != nil {
			return paths, err
		}
	}
	return paths, nil
}

// row is any scenario's row that embeds the common figures.
type row interface{ figures() common }

// hasAcquisitions reports whether any row has something to chart.
func hasAcquisitions[R row](rows []R) bool {
	for _, m := range rows {
		if m.figures().Acquisitions > 0 {
			return true
		}
	}
	return false
}
