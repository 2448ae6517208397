package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// writeRWChart writes an SVG chart of rows (all the rwlock rows of a run)
// to w: a panel per mix, in the order of rows, of the acquisitions per
// second at each worker count (on the most Clients it ran on), a bar per
// contender. A cell that did not run, or failed, is a missing bar. If no row
// has acquisitions it returns an error and writes nothing; if w fails, part
// of the SVG may have been written.
func writeRWChart(w io.Writer, rows []rwRow, title string) error {
	if !hasAcquisitions(rows) {
		return errors.New("chart: nothing to chart: no rwlock row has any acquisitions")
	}
	var (
		mixes, workers []int
		locks          []string
	)
	rows = widest(rows)
	for _, r := range rows {
		mixes = appendNew(mixes, r.ReadPct)
		workers = appendNew(workers, r.Workers)
		locks = appendNew(locks, r.Lock)
	}
	var panels []*plot.Plot
	for _, pct := range mixes {
		p, err := mixPanel(rows, pct, workers, locks)
		if err != nil {
			return err
		}
		panels = append(panels, p)
	}
	return drawPanels(w, panels, title)
}

// mixPanel plots the acquisitions per second of the rows of one mix: a
// group of bars per worker count, a bar per lock.
func mixPanel(rows []rwRow, readPct int, workers []int, locks []string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = mixName(readPct) + " reads"
	p.X.Label.Text = "workers"
	p.Y.Label.Text = "acquisitions per second"
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs = vg.Points(6)
	p.Y.Tick.Marker = plainTicks{}
	grid := plotter.NewGrid()
	grid.Vertical.Width = 0
	p.Add(grid)
	top := 0.0
	width := vg.Points(60 / float64(len(locks)))
	for i, lock := range locks {
		vals := make(plotter.Values, len(workers))
		for j, n := range workers {
			for _, r := range rows {
				if r.ReadPct == readPct && r.Workers == n && r.Lock == lock {
					vals[j] = r.AcqPerSec
					top = max(top, r.AcqPerSec)
				}
			}
		}
		bars, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return nil, fmt.Errorf("chart: %s at %d%% reads: %w", lock, readPct, err)
		}
		bars.Color = plotutil.Color(i)
		bars.LineStyle.Width = 0
		bars.Offset = width * vg.Length(float64(i)-float64(len(locks)-1)/2)
		p.Add(bars)
		p.Legend.Add(lock, bars)
	}
	labels := make([]string, len(workers))
	for j, n := range workers {
		labels[j] = strconv.Itoa(n)
	}
	p.NominalX(labels...)
	// Room for the outer bars, and above the bars for the legend.
	p.X.Min, p.X.Max = -0.5, float64(len(workers))-0.5
	p.Y.Min, p.Y.Max = 0, max(top, 1)*1.25
	return p, nil
}

// plainTicks are gonum's default ticks, labelled without trailing zeros.
type plainTicks struct{}

// Ticks returns the default ticks from lo to hi, relabelled.
func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i, t := range ticks {
		if t.Label != "" {
			ticks[i].Label = strconv.FormatFloat(t.Value, 'f', -1, 64)
		}
	}
	return ticks
}

// appendNew appends v to s unless s holds it already.
func appendNew[T comparable](s []T, v T) []T {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// widest keeps, of the rows of each mix and worker count, those that ran in
// the most Clients (one per worker by default).
func widest(rows []rwRow) []rwRow {
	most := map[[2]int]int{}
	for _, r := range rows {
		k := [2]int{r.ReadPct, r.Workers}
		most[k] = max(most[k], r.Procs)
	}
	var out []rwRow
	for _, r := range rows {
		if r.Procs == most[[2]int{r.ReadPct, r.Workers}] {
			out = append(out, r)
		}
	}
	return out
}
