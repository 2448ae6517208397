// Command bench compares redcoord's locks with each other and with the
// Redis locks Go services use today (go-redsync/redsync, bsm/redislock), on
// one contended name: throughput, wait-time percentiles, hand-off gap, Redis
// round trips per acquisition, fairness, and the mutual-exclusion violations
// the harness itself counts.
//
//	go run ./bench                        # embedded miniredis, no set-up
//	go run ./bench -redis 127.0.0.1:6379  # a real server
//	go run ./bench -scenario seckill      # a flash sale: zero oversell
//
// The table goes to stdout, progress to stderr, and results.json and
// waits.svg to -out (bench-out/ by default). Exit status: 0 when every cell
// ran, 1 when Redis is unreachable or a cell failed, 2 for bad flags, 130
// after Ctrl-C (the finished rows are still printed).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

func main() {
	// go-redis logs failed dials on its own; every failure that matters
	// reaches run as an error, and is said there once.
	redis.SetLogger(quiet{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// cell is one row to measure.
type cell struct {
	scenario string
	ct       contender
	workers  int
}

func (c cell) String() string {
	if c.scenario == "seckill" {
		return "seckill " + c.ct.name
	}
	return fmt.Sprintf("%s %s, %d workers", c.scenario, c.ct.name, c.workers)
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
	cells, notYet := plan(cfg)
	if len(cells) == 0 {
		fmt.Fprintf(stderr, "bench: nothing to run: %v not built yet, or no lock in -locks for it\n", notYet)
		return 1
	}
	b, err := connect(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 1
	}
	defer b.close()
	prefix := "rcbench-" + nonce()
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := b.cleanup(cctx, prefix); err != nil {
			fmt.Fprintf(stderr, "bench: delete the run's keys (%s*): %v\n", prefix, err)
		}
	}()

	res := newResults(cfg, b.name)
	res.NotYet = notYet
	res.short = b.short
	bar := newProgress(stderr, cfg.progress, len(cells))
	failed := false
	for i, c := range cells {
		if ctx.Err() != nil {
			break
		}
		bar.start(c.String())
		if err := measure(ctx, b, cfg, c, prefix, fmt.Sprintf("%s:%d", c.scenario, i), res); err != nil && ctx.Err() == nil {
			bar.finish()
			fmt.Fprintf(stderr, "bench: %s: %v\n", c, err)
			failed = true
			continue
		}
		bar.step()
	}
	bar.finish()
	res.Interrupted = ctx.Err() != nil
	if err := output(cfg, res, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 1
	}
	switch {
	case res.Interrupted:
		return 130
	case failed:
		return 1
	}
	return 0
}

// plan lists the cells cfg asks for, and the scenarios it asks for that
// have no primitive yet.
func plan(cfg *config) (cells []cell, notYet []string) {
	for _, s := range cfg.scenarios {
		switch s {
		case "mutex":
			for _, w := range cfg.workers {
				for _, ct := range contenders(cfg) {
					if ct.name != "none" {
						cells = append(cells, cell{s, ct, w})
					}
				}
			}
		case "seckill":
			for _, ct := range contenders(cfg) {
				cells = append(cells, cell{s, ct, cfg.concurrency})
			}
		default:
			notYet = append(notYet, s)
		}
	}
	return cells, notYet
}

// measure runs one cell on its own key and appends its row to res, unless
// ctx ended during the cell.
func measure(ctx context.Context, b *backend, cfg *config, c cell, prefix, key string, res *results) error {
	f, err := openFleet(ctx, b, cfg, c.ct, c.workers, prefix, key)
	if err != nil {
		return err
	}
	defer f.close()
	switch c.scenario {
	case "mutex":
		row := runMutex(ctx, f, cfg, c.ct)
		if ctx.Err() == nil {
			res.Mutex = append(res.Mutex, row)
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
