package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress shows which cell runs, on stderr: a bar on a terminal, one line
// per cell elsewhere (a CI log, a file), nothing with -progress=off.
type progress struct {
	bar   *progressbar.ProgressBar // nil: plain lines, or nothing
	plain io.Writer                // nil: nothing
	w     io.Writer                // stderr
	total int
	done  int
}

// newProgress returns the progress of total cells, shown on stderr as mode
// (the -progress flag) says.
func newProgress(stderr io.Writer, mode string, total int) *progress {
	p := &progress{total: total, w: stderr}
	tty := false
	if f, ok := stderr.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	switch {
	case mode == "off":
	case mode == "on" || tty:
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetWidth(24),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionShowDescriptionAtLineEnd(),
			progressbar.OptionClearOnFinish(),
		)
	default:
		p.plain = stderr
	}
	return p
}

// start says that the next cell, described by what, is running.
func (p *progress) start(what string) {
	switch {
	case p.bar != nil:
		p.bar.Describe(what)
	case p.plain != nil:
		fmt.Fprintf(p.plain, "bench: [%d/%d] %s\n", p.done+1, p.total, what)
	}
}

// still says that the cell described by what is still running after
// elapsed: a cell can run long (a seckill whose orders all wait their
// timeout), and a silent minute looks like a hang.
func (p *progress) still(what string, elapsed time.Duration) {
	switch {
	case p.bar != nil:
		p.bar.Describe(fmt.Sprintf("%s (%v)", what, elapsed.Round(time.Second)))
	case p.plain != nil:
		fmt.Fprintf(p.plain, "bench: [%d/%d] %s: still running, %v\n", p.done+1, p.total, what, elapsed.Round(time.Second))
	}
}

// say prints a line (a cell's failure) without breaking the bar.
func (p *progress) say(line string) {
	w := p.plain
	if p.bar != nil {
		_ = p.bar.Clear()
		w = p.w
	}
	if w != nil {
		fmt.Fprintln(w, line)
	}
	if p.bar != nil {
		_ = p.bar.RenderBlank()
	}
}

// step marks a cell finished.
func (p *progress) step() {
	p.done++
	if p.bar != nil {
		_ = p.bar.Add(1)
	}
}

// finish clears the bar so the table starts on a clean line.
func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		_ = p.bar.Exit()
	}
}
