// Command bench compares redcoord's locks with each other and with the
// Redis locks Go services use today (go-redsync/redsync, bsm/redislock), on
// one contended name: throughput, wait-time percentiles, hand-off gap, Redis
// round trips and server time (on a real server) per acquisition, fairness,
// and the mutual-exclusion violations the harness itself counts.
//
//	go run ./bench                           # a redis-server it starts when one is on PATH, else an embedded miniredis
//	go run ./bench -redis 127.0.0.1:6379     # a server of yours
//	go run ./bench -scenario rwlock          # rrwlock vs rlock, read-mostly and write-heavy
//	go run ./bench -scenario semaphore       # rsemaphore unfair, fair and expirable, 8 permits
//	go run ./bench -scenario seckill         # a flash sale: zero oversell
//	go run ./bench -scenario ratelimit       # -rate events/s with -burst: rratelimit Wait vs redis_rate Allow+sleep
//	go run ./bench -scenario capacity        # Redis CPU per Lock+Unlock, 32 names at once and one alone
//	go run ./bench -names 64 -cluster a,b,c  # worker i on name i mod 64, over a cluster's shards
//
// The table goes to stdout, progress and warnings to stderr, results.json
// to -out (bench-out/ by default), and beside it waits.svg when the mutex
// scenario ran, rwlock.svg when the rwlock scenario did, semaphore.svg when
// the semaphore scenario did. The run deletes its keys at the end. Exit
// status: 0 when every cell ran; 1 when Redis is unreachable, a cell failed,
// a lock let two workers in at once, a semaphore let in more workers than
// its permits, a lock let an item be sold twice, or the keys could not be
// deleted; 2 for bad flags; 130 after Ctrl-C (the finished rows are still
// printed).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

func main() {
	// go-redis logs failed dials on its own; every failure that matters
	// reaches run as an error, and is said there once.
	redis.SetLogger(quiet{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first Ctrl-C, a second one kills the process at once.
	context.AfterFunc(ctx, func() {
		stop()
		fmt.Fprintln(os.Stderr, "\nbench: stopping: releasing locks and deleting the run's keys (Ctrl-C again to kill)")
	})
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// quiet is go-redis's logger here: silent.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// cell is one row to measure.
type cell struct {
	scenario string
	ct       contender
	workers  int
	names    int // lock names the workers are spread over: 1, or up to -names (mutex, semaphore)
	procs    int // Clients the workers are spread over, from 1 to workers
	readPct  int // rwlock: the mix's share of reads, in percent
	run      int // capacity: which of the -runs, from 1
}

func (c cell) String() string {
	scenario := c.scenario
	switch c.scenario {
	case "seckill":
		return fmt.Sprintf("seckill %s, %s", c.ct.name, clients(c.procs))
	case "rwlock":
		scenario += " " + mixName(c.readPct)
	case "capacity":
		return fmt.Sprintf("capacity %s, %s, run %d",
			c.ct.name, plural(c.workers, "worker", "workers each on its own Client and name"), c.run)
	}
	s := fmt.Sprintf("%s %s, %s", scenario, c.ct.name, plural(c.workers, "worker", "workers"))
	if c.workers > 1 {
		s += " on " + clients(c.procs)
	}
	if c.names > 1 {
		s += fmt.Sprintf(" over %d names", c.names)
	}
	return s
}

// clients says how many Clients: "1 Client", "8 Clients". A Client is
// one go-redis client and, for redcoord, one redcoord Client, as one
// service would have; all of them run in the bench's own process.
func clients(n int) string { return plural(n, "Client", "Clients") }

// plural returns "n one" or "n many", as n asks.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// run is the whole command, with its streams and signals passed in so tests
// run it in-process. It returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseConfig(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	if cfg.out != "" { // before a run that may take minutes
		if err := writable(cfg.out); err != nil {
			fmt.Fprintf(stderr, "bench: -out %q: %v\n", cfg.out, err)
			return 2
		}
	}
	cells := plan(cfg)
	cfg.logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	b, err := connect(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return 130
		}
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 1
	}
	defer b.close()
	if b.note != "" {
		fmt.Fprintln(stderr, b.note)
	}

	if cfg.clean {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := b.cleanup(cctx, runPrefix)
		cancel()
		if err != nil {
			fmt.Fprintf(stderr, "bench: -clean: %v\n", err)
			return 1
		}
	}
	var metrics *metricsRecorder
	if cfg.metrics {
		if metrics, err = newMetrics(); err != nil {
			fmt.Fprintf(stderr, "bench: -metrics: %v\n", err)
			return 1
		}
		cfg.observe = metrics.observe
	}

	res := newResults(cfg, b)
	prefix := runPrefix + nonce()
	if cfg.progress != "off" {
		fmt.Fprintln(stderr, "bench: "+estimate(cells, cfg.duration, cfg.timeout))
	}
	bar := newProgress(stderr, cfg.progress, len(cells))
	failed := false
	for i, c := range cells {
		if ctx.Err() != nil {
			break
		}
		bar.start(c.String())
		stop := stillRunning(bar, c.String(), stillEvery)
		err := measure(ctx, b, cfg, c, prefix, fmt.Sprintf("%s:%d", c.scenario, i), res)
		stop()
		if err != nil && ctx.Err() == nil {
			bar.say(fmt.Sprintf("bench: %s: %v", c, err))
			failed = true
		}
		bar.step()
	}
	bar.finish()
	res.Interrupted = ctx.Err() != nil
	compare(res.RWLock)

	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.cleanup(cctx, prefix); err != nil {
		fmt.Fprintf(stderr, "bench: delete the run's keys (%s*): %v\n", prefix, err)
		failed = true
	}
	if err := output(cfg, res, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		failed = true
	}
	if metrics != nil {
		if err := metrics.print(stdout); err != nil {
			fmt.Fprintf(stderr, "bench: -metrics: %v\n", err)
			failed = true
		}
	}
	for _, v := range res.violations() {
		fmt.Fprintf(stderr, "bench: %s\n", v)
		failed = true
	}
	switch {
	case res.Interrupted:
		return 130
	case failed:
		return 1
	}
	return 0
}

// plan lists the cells cfg asks for: for each worker count, each count of
// Clients (-procs; two entries that come to the same count run once),
// each contender.
func plan(cfg *config) (cells []cell) {
	for _, s := range cfg.scenarios {
		switch s {
		case "mutex":
			for _, w := range cfg.workers {
				for _, p := range shapes(cfg, w) {
					for _, ct := range contenders(cfg) {
						if ct.name != "none" {
							cells = append(cells, cell{scenario: s, ct: ct, workers: w, names: min(cfg.names, w), procs: p})
						}
					}
				}
			}
		case "rwlock":
			for _, pct := range cfg.mixes {
				for _, w := range cfg.workers {
					for _, p := range shapes(cfg, w) {
						for _, ct := range rwContenders(cfg) {
							cells = append(cells, cell{scenario: s, ct: ct, workers: w, names: 1, readPct: pct, procs: p})
						}
					}
				}
			}
		case "semaphore":
			for _, w := range cfg.workers {
				for _, p := range shapes(cfg, w) {
					for _, ct := range semContenders(cfg) {
						cells = append(cells, cell{scenario: s, ct: ct, workers: w, names: min(cfg.names, w), procs: p})
					}
				}
			}
		case "ratelimit":
			for _, w := range cfg.workers {
				for _, p := range shapes(cfg, w) {
					for _, name := range rateNames {
						cells = append(cells, cell{scenario: s, ct: contender{name: name}, workers: w, names: 1, procs: p})
					}
				}
			}
		case "capacity":
			cells = append(cells, capacityCells(cfg)...)
		case "seckill":
			for _, p := range shapes(cfg, cfg.concurrency) {
				for _, ct := range contenders(cfg) {
					cells = append(cells, cell{scenario: s, ct: ct, workers: cfg.concurrency, names: 1, procs: p})
				}
			}
		}
	}
	return cells
}

// shapes returns the Client counts -procs asks for with workers workers,
// in its order, without repeats.
func shapes(cfg *config, workers int) []int {
	var out []int
	for _, p := range cfg.procs {
		if n := procsFor(p, workers); !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// measure runs one cell on its own key and appends its row to res, unless
// ctx ended during the cell. Once the cell's fleet is closed it deletes the
// keys under prefix (see clearCell): cells run one at a time, so they are
// this cell's.
func measure(ctx context.Context, b *backend, cfg *config, c cell, prefix, key string, res *results) (err error) {
	defer func() { err = errors.Join(err, clearCell(b, prefix)) }()
	if c.scenario == "ratelimit" { // no locks: its own Clients
		row, err := runRateLimit(ctx, b, cfg, c, prefix, key)
		if err == nil && ctx.Err() == nil {
			res.RateLimit = append(res.RateLimit, row)
		}
		return err
	}
	f, err := openFleet(ctx, b, cfg, c.ct, c.workers, c.names, c.procs, prefix, key)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.close()) }()
	switch c.scenario {
	case "mutex":
		row := runMutex(ctx, f, cfg, c.ct)
		if ctx.Err() == nil {
			res.Mutex = append(res.Mutex, row)
		}
	case "rwlock":
		row := runRW(ctx, f, cfg, c.ct, c.readPct)
		if ctx.Err() == nil {
			res.RWLock = append(res.RWLock, row)
		}
	case "semaphore":
		row := runSemaphore(ctx, f, cfg, c.ct)
		if ctx.Err() == nil {
			res.Semaphore = append(res.Semaphore, row)
		}
	case "capacity":
		row := runCapacity(ctx, f, b, cfg, c)
		if ctx.Err() == nil {
			res.Capacity = append(res.Capacity, row)
		}
	case "seckill":
		row, err := runSeckill(ctx, f, cfg, c.ct, prefix+":"+key+":stock")
		if err != nil {
			return err
		}
		if ctx.Err() == nil {
			res.Seckill = append(res.Seckill, row)
		}
	}
	return nil
}

// clearCell deletes the keys a cell left under prefix: redcoord's markers,
// by which a retried release or a late acquire request is recognised (a
// minute each, one or two per handle), and the fences (a day). Left in
// place they slow the next cells on the embedded miniredis, which, keeping
// TTLs on the wall clock (ClockTTL), visits every key in sorted order on
// each command, a script's commands included: a few hundred leftover keys
// stretch a fair lock's hand-off from under 1 ms to several.
func clearCell(b *backend, prefix string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.cleanup(ctx, prefix); err != nil {
		return fmt.Errorf("delete the cell's keys: %w", err)
	}
	return nil
}

// stillEvery is how often a cell that is still running says so.
const stillEvery = 10 * time.Second

// stillRunning has bar say every interval that the cell described by what
// is still running, until the returned func is called; that func waits for
// the goroutine to end.
func stillRunning(bar *progress, what string, every time.Duration) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	start := time.Now()
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				bar.still(what, time.Since(start))
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// output prints the table or the JSON on stdout and writes the files.
func output(cfg *config, res *results, stdout, stderr io.Writer) error {
	var err error
	if cfg.json {
		err = writeJSON(stdout, res)
	} else {
		err = writeTable(stdout, res)
	}
	if err != nil || cfg.out == "" {
		return err
	}
	paths, err := writeFiles(cfg.out, res)
	if len(paths) > 0 && !cfg.json {
		fmt.Fprintf(stdout, "\nwrote %v\n", paths)
	}
	return err
}

// nonce returns 8 random hex digits: each run's keys are its own.
func nonce() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// estimate says how many cells a run has and about how long they take:
// each cell of the timed scenarios runs for d; a seckill cell runs until
// its orders are done, each order waiting at most timeout.
func estimate(cells []cell, d, timeout time.Duration) string {
	timed := 0
	for _, c := range cells {
		if c.scenario != "seckill" {
			timed++
		}
	}
	plural := func(n int, what string) string {
		if n == 1 {
			return "1 " + what
		}
		return fmt.Sprintf("%d %ss", n, what)
	}
	total := time.Duration(timed) * d
	round := time.Second
	if total < 10*time.Second {
		round = 100 * time.Millisecond
	}
	msg := plural(len(cells), "cell")
	if timed > 0 {
		msg += fmt.Sprintf(", %d of %v each: about %v", timed, d, total.Round(round))
		if total >= time.Minute {
			msg += " (-duration, -workers and -procs shorten it)"
		}
	}
	if seckill := len(cells) - timed; seckill > 0 {
		each := ", running"
		if seckill > 1 {
			each = ", each running"
		}
		msg += fmt.Sprintf("; %s%s until its orders are done (an order waits at most -order-timeout %v)",
			plural(seckill, "seckill cell"), each, timeout)
	}
	return msg
}
