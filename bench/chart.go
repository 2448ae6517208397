package main

import (
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

const (
	// minWaitMs is the floor of the wait axis: a log scale cannot show 0.
	minWaitMs = 0.01
	// tailX is where the maximum (q = 100) sits on the percentile axis,
	// half a decade right of 99.9 (x = 3).
	tailX = 3.5
)

// writeChart writes an SVG chart of rows (all the mutex rows of a run, or
// all the semaphore rows) to w. It charts the largest worker count that has
// any acquisitions, on the most Clients it ran on (one per worker by
// default), one series per contender in the order of rows: on the
// left the wait time by percentile, on the right each worker's share of the
// acquisitions. If rows hold nothing to chart it returns an error and
// writes nothing; if w fails, part of the SVG may have been written.
func writeChart[R row](w io.Writer, rows []R, title string) error {
	all := make([]common, len(rows))
	for i, r := range rows {
		all[i] = r.figures()
	}
	cell := largestCell(all)
	if len(cell) == 0 {
		return errors.New("chart: nothing to chart: no row has any acquisitions")
	}
	n := cell[0].Workers
	left, err := waitPanel(cell, n)
	if err != nil {
		return err
	}
	right, err := sharePanel(cell, n)
	if err != nil {
		return err
	}
	return drawPanels(w, []*plot.Plot{left, right}, title)
}

// drawPanels writes panels side by side, 6 inches wide each, under title
// (none if ""), as an SVG to w.
func drawPanels(w io.Writer, panels []*plot.Plot, title string) error {
	c := vgsvg.New(6*vg.Inch*vg.Length(len(panels)), 4.5*vg.Inch)
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: 1, Cols: len(panels), PadX: vg.Inch / 3,
		PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 4}
	if title != "" {
		sty := draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, 14),
			Handler: plot.DefaultTextHandler, XAlign: draw.XCenter, YAlign: draw.YTop}
		dc.FillText(sty, vg.Point{X: dc.Center().X, Y: dc.Max.Y - vg.Inch/10}, title)
		tiles.PadTop = vg.Inch / 2
	}
	grid := [][]*plot.Plot{panels}
	for j, cv := range plot.Align(grid, tiles, dc)[0] {
		panels[j].Draw(cv)
	}
	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("chart: write svg: %w", err)
	}
	return nil
}

// largestCell returns the rows with acquisitions at the largest worker
// count that has any, and of those the ones on the most Clients, in
// their order in rows, or nil if none has any.
func largestCell(rows []common) []common {
	n, procs := 0, 0
	for _, r := range rows {
		if r.Acquisitions > 0 && r.Workers > 0 {
			n = max(n, r.Workers)
		}
	}
	for _, r := range rows {
		if r.Acquisitions > 0 && r.Workers == n {
			procs = max(procs, r.Procs)
		}
	}
	var cell []common
	for _, r := range rows {
		if n > 0 && r.Workers == n && r.Procs == procs && r.Acquisitions > 0 {
			cell = append(cell, r)
		}
	}
	return cell
}

// waitPanel plots each row's wait distribution against the percentile, on
// axes stretched so that the tail gets as much room as the body.
func waitPanel(cell []common, n int) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Wait time by percentile (%d workers on %s)", n, clients(cell[0].Procs))
	p.X.Label.Text = "percentile"
	p.Y.Label.Text = "wait (ms)"
	// Waits grow to the right, so the bottom right corner is the emptiest.
	p.Legend.Top, p.Legend.Left = false, false
	p.Legend.XOffs, p.Legend.YOffs = -vg.Points(6), vg.Points(6)
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, r := range cell {
		var xys plotter.XYs
		for _, d := range r.WaitDist {
			if d.Q <= 0 {
				continue // x would be 0: nothing to see left of the 10th
			}
			y := max(d.Ms, minWaitMs)
			xys = append(xys, plotter.XY{X: percentileX(d.Q), Y: y})
			lo, hi = min(lo, y), max(hi, y)
		}
		if len(xys) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, fmt.Errorf("chart: %s waits: %w", r.Lock, err)
		}
		line.Color, line.Dashes = plotutil.Color(i), plotutil.Dashes(i)
		points.Color, points.Shape = plotutil.Color(i), plotutil.Shape(i)
		p.Add(line, points)
		p.Legend.Add(r.Lock, line, points)
	}
	if math.IsInf(lo, 1) {
		lo, hi = minWaitMs, 1 // no distributions: an empty panel
	}
	// Whole decades, so that both ends carry a labelled tick.
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Y.Min = math.Pow(10, math.Floor(math.Log10(lo)))
	p.Y.Max = math.Pow(10, math.Ceil(math.Log10(hi)))
	if p.Y.Max <= p.Y.Min {
		p.Y.Max = p.Y.Min * 10
	}
	p.X.Min, p.X.Max = 0, tailX+0.2
	p.X.Tick.Marker = plot.ConstantTicks{
		{Value: percentileX(50), Label: "50"},
		{Value: percentileX(75)},
		{Value: percentileX(90), Label: "90"},
		{Value: percentileX(95)},
		{Value: percentileX(99), Label: "99"},
		{Value: percentileX(99.9), Label: "99.9"},
		{Value: tailX, Label: "max"},
	}
	p.Add(plotter.NewGrid())
	return p, nil
}

// percentileX is where percentile q sits on the wait panel's x axis: the
// number of nines, -log10(1-q/100), so 90 is at 1 and 99.9 at 3; the
// maximum (q >= 100) is at tailX.
func percentileX(q float64) float64 {
	if q >= 100 {
		return tailX
	}
	return -math.Log10(1 - q/100)
}

// sharePanel plots each row's per-worker shares of its acquisitions,
// largest first, against the worker's rank, with the equal share for n
// workers as a reference: a fair lock is flat, an unfair one steep.
func sharePanel(cell []common, n int) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Share of acquisitions per worker (%d workers on %s)", n, clients(cell[0].Procs))
	p.X.Label.Text = "worker rank (most acquisitions first)"
	p.Y.Label.Text = "share of acquisitions (%)"
	p.Legend.Top, p.Legend.XOffs = true, -vg.Points(6)
	p.Y.Min, p.X.Min = 0, 1
	p.Add(plotter.NewGrid())
	for i, r := range cell {
		var sum int64
		for _, c := range r.PerWorker {
			sum += c
		}
		if sum == 0 {
			continue
		}
		counts := slices.SortedFunc(slices.Values(r.PerWorker),
			func(a, b int64) int { return cmp.Compare(b, a) })
		xys := make(plotter.XYs, len(counts))
		for k, c := range counts {
			xys[k] = plotter.XY{X: float64(k + 1), Y: 100 * float64(c) / float64(sum)}
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("chart: %s shares: %w", r.Lock, err)
		}
		line.Color, line.Dashes = plotutil.Color(i), plotutil.Dashes(i)
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(r.Lock, line)
	}
	equal, err := plotter.NewLine(plotter.XYs{{X: 1, Y: 100 / float64(n)}, {X: float64(max(n, 2)), Y: 100 / float64(n)}})
	if err != nil {
		return nil, fmt.Errorf("chart: equal share: %w", err)
	}
	equal.Color = color.Gray{Y: 96}
	equal.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(equal)
	p.Legend.Add("equal share", equal)
	return p, nil
}
