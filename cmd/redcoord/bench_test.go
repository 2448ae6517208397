package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
)

// benchNames is how many held names BenchmarkLs lists.
const benchNames = 10000

// BenchmarkLs times one "redcoord ls" of 10,000 names, each held by an
// rlock of the library with a fixed lease, on a redis-server of its own,
// with SCAN's COUNT 500 (the default) and 1000.
// After the timed runs, one more ls runs with every command logged by
// SLOWLOG (slowlog-log-slower-than 0), and it reports what the server
// spent: on each SCAN batch (the median, the longest and the mean), on
// the whole ls, and on its commands of any kind (the 99th percentile and
// the longest, named in the log: on a loaded machine, a command during
// which the server's thread was descheduled).
//
//	go test -run '^$' -bench BenchmarkLs -benchtime 10x ./cmd/redcoord
func BenchmarkLs(b *testing.B) {
	srv := redistest.Real(b)
	rdb := srv.Client(b, func(o *redis.Options) { o.PoolSize = 16 })
	c := newClient(b, rdb)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < benchNames; i += 16 {
				if err := rlock.New(c, fmt.Sprintf("bench:%05d", i)).LockWithLease(ctx, time.Hour); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	for _, count := range []string{"500", "1000"} {
		b.Run("count="+count, func(b *testing.B) { benchLs(b, rdb, "-redis", srv.Addr, "-count", count, "ls") })
	}
}

// benchLs times "redcoord args" and reports what SLOWLOG says of one more.
func benchLs(b *testing.B, rdb *redis.Client, args ...string) {
	ctx := context.Background()
	var out bytes.Buffer
	if r := run(args, nil, &out, io.Discard); r != exitOK || strings.Count(out.String(), "\n") != benchNames+1 {
		b.Fatalf("ls: exit status %d, %d lines", r, strings.Count(out.String(), "\n"))
	}

	for b.Loop() {
		if r := run(args, nil, io.Discard, io.Discard); r != exitOK {
			b.Fatalf("ls: exit status %d", r)
		}
	}
	b.StopTimer()

	for _, kv := range [][2]string{{"slowlog-max-len", "1000000"}, {"slowlog-log-slower-than", "0"}} {
		if err := rdb.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			b.Fatal(err)
		}
	}
	rdb.SlowLogReset(ctx)
	r := run(args, nil, io.Discard, io.Discard)
	rdb.ConfigSet(ctx, "slowlog-log-slower-than", "10000") // the default: the next timed runs log nothing
	if r != exitOK {
		b.Fatalf("ls: exit status %d", r)
	}
	logged, err := rdb.SlowLogGet(ctx, -1).Result()
	if err != nil {
		b.Fatal(err)
	}
	var scans, scanSum, scanMax, total, cmdMax time.Duration
	var longest string
	var all, scanAll []time.Duration
	for _, l := range logged {
		cmd := strings.ToLower(l.Args[0])
		if cmd == "slowlog" || cmd == "config" {
			continue
		}
		total += l.Duration
		all = append(all, l.Duration)
		if l.Duration > cmdMax {
			cmdMax, longest = l.Duration, strings.Join(l.Args[:min(len(l.Args), 3)], " ")
		}
		if cmd == "scan" {
			scans++
			scanSum += l.Duration
			scanMax = max(scanMax, l.Duration)
			scanAll = append(scanAll, l.Duration)
		}
	}
	if scans == 0 {
		b.Fatal("SLOWLOG logged no SCAN")
	}
	b.Logf("the longest command: %s, %v", longest, cmdMax)
	b.ReportMetric(float64(scans), "scan-batches")
	slices.Sort(scanAll)
	b.ReportMetric(float64(scanAll[len(scanAll)/2].Microseconds()), "scan-p50-µs")
	b.ReportMetric(float64(scanMax.Microseconds()), "scan-max-µs")
	b.ReportMetric(float64(scanSum.Microseconds())/float64(scans), "scan-mean-µs")
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "cmd-p99-µs")
	b.ReportMetric(float64(cmdMax.Microseconds()), "cmd-max-µs")
	b.ReportMetric(float64(total.Microseconds()), "server-µs/ls")
}
