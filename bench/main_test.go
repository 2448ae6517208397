package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// tinyCells are flags that make a run take well under a second: every
// contender, two worker counts, cells of 50ms; tiny runs them on the
// embedded miniredis.
var (
	tinyCells = []string{"-duration", "50ms", "-workers", "1,4", "-procs", "2"}
	tiny      = append(tinyCells[:len(tinyCells):len(tinyCells)], "-start", "miniredis")
)

// bench runs the command in-process and returns its exit status and streams.
func bench(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestTableHasEveryContender(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := bench(t, context.Background(), append(tiny, "-out", dir)...)
	require.Equal(t, 0, code, "stderr:\n%s", errOut)
	require.Contains(t, out, "backend: embedded miniredis")
	require.Contains(t, out, "not production speed")
	for _, lock := range []string{"rlock", "rlock-poll", "rfairlock", "redsync", "redislock"} {
		for _, w := range []string{"1", "4"} {
			require.Regexp(t, `(?m)^\s*`+lock+`\s+`+w+`\s`, out, "no row for %s at %s workers", lock, w)
		}
	}
	require.NotRegexp(t, `(?m)^\s*none\s`, out, "the no-lock baseline runs in seckill only")
	require.NotContains(t, out, "no lock at all", "the legend names the locks that ran")
	require.Contains(t, errOut, "[10/10] mutex redislock, 4 workers", "a line per cell on a non-terminal stderr")

	res := readResults(t, filepath.Join(dir, "results.json"))
	require.Len(t, res.Mutex, 10)
	for _, m := range res.Mutex {
		require.Zero(t, m.ME, "%s, %d workers: mutual-exclusion violations", m.Lock, m.Workers)
		require.Positive(t, m.Acquisitions, "%s, %d workers", m.Lock, m.Workers)
		require.Len(t, m.PerWorker, m.Workers)
		require.NotEmpty(t, m.WaitDist)
		// A Lock and an Unlock are two round trips at least; the count is
		// read as the cell ends, before the Unlocks of the last holders.
		require.GreaterOrEqual(t, m.RoundTrips, 2.0-float64(m.Workers)/float64(m.Acquisitions),
			"%s, %d workers", m.Lock, m.Workers)
		require.Nil(t, m.ServerUs, "%s, %d workers: miniredis keeps no commandstats", m.Lock, m.Workers)
	}
	require.Regexp(t, `(?m)\sround\s+server\s.*\n.*\strips\s+µs\s+Jain\s`, out)
	require.Regexp(t, `(?m)^\s*rlock\s+1\s.*\s\d+\.\d\d\s+-\s+\d\.\d{3}\s`, out,
		"round trips, then - for the server time on miniredis, then Jain")
	svg, err := os.ReadFile(filepath.Join(dir, "waits.svg"))
	require.NoError(t, err)
	require.Contains(t, string(svg), "<svg")
	require.Contains(t, string(svg), "rfairlock")
}

func TestJSONOnStdout(t *testing.T) {
	code, out, errOut := bench(t, context.Background(), append(tiny,
		"-json", "-out", "", "-locks", "rlock,rfairlock,none", "-scenario", "mutex,rwlock,seckill",
		"-mixes", "80", "-orders", "60", "-concurrency", "8", "-stock", "20")...)
	require.Equal(t, 0, code, "stderr:\n%s", errOut)
	var res results
	require.NoError(t, json.Unmarshal([]byte(out), &res), "stdout is one JSON document")
	require.Len(t, res.Mutex, 4)
	require.Len(t, res.RWLock, 4, "rrwlock and rlock at 1 and 4 workers, whatever -locks says")
	for _, m := range res.RWLock {
		require.Equal(t, "read-mostly 80%", m.Mix)
		require.Zero(t, m.ME, "%s, %d workers", m.Lock, m.Workers)
	}
	require.Equal(t, []int{80}, res.Settings.Mixes)
	require.Len(t, res.Seckill, 3)
	for _, k := range res.Seckill {
		require.Equal(t, int64(60), k.Sold+k.SoldOut+k.Failed, "%s: every order answered or failed", k.Lock)
		if k.Lock == "none" {
			continue // no lock: oversell is what this row is for
		}
		require.Zero(t, k.Failed, "%s: %s", k.Lock, k.ErrorSample)
		require.Equal(t, int64(20), k.Sold, "%s", k.Lock)
		require.Zero(t, k.StockLeft, "%s", k.Lock)
		require.Zero(t, k.Oversold, "%s", k.Lock)
	}
}

func TestBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-workers", "0"}, "-workers"},
		{[]string{"-workers", "1,x"}, "-workers"},
		{[]string{"-mixes", "95,101"}, `-mixes: "101" is not a percentage from 0 to 100`},
		{[]string{"-mixes", "-1"}, "-mixes"},
		{[]string{"-scenario", "race"}, `-scenario: unknown "race"`},
		{[]string{"-locks", "zookeeper"}, "-locks"},
		{[]string{"-duration", "0s"}, "-duration"},
		{[]string{"-hold", "-1ms"}, "-hold"},
		{[]string{"-procs", "0"}, "-procs"},
		{[]string{"-procs", "w,x"}, `-procs: "x" is neither a Client count`},
		{[]string{"-orders", "0"}, "-orders"},
		{[]string{"-redis", "127.0.0.1:1", "-cluster", "127.0.0.1:2"}, "give one, not both"},
		{[]string{"-progress", "maybe"}, "-progress"},
		{[]string{"-hold", "6s", "-duration", "10s"}, "-hold 6s: must be from 0s to 5s"},
		{[]string{"-hold", "1s", "-duration", "1s"}, "shorter than -duration"},
		{[]string{"-duration", "2h"}, "-duration"},
		{[]string{"-password", "x"}, "need -redis or -cluster"},
		{[]string{"-username", "x"}, "need -redis or -cluster"},
		{[]string{"-scenario", "all,race"}, `-scenario: unknown "race"; want one of mutex, rwlock, semaphore, seckill, ratelimit, capacity, or all`},
		{[]string{"-locks", "none"}, "the mutex scenario needs a lock"},
		{[]string{"-cluster", "127.0.0.1:7000,"}, "an empty address"},
		{[]string{"-start", "redis"}, `-start "redis": want redis-server, miniredis or auto`},
		{[]string{"-start", "miniredis", "-redis", "127.0.0.1:1"}, "-start: the bench starts a server only without -redis and -cluster"},
		{[]string{"-nosuchflag"}, "nosuchflag"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		code, out, errOut := bench(t, context.Background(), tc.args...)
		require.Equal(t, 2, code, "%v", tc.args)
		require.Empty(t, out, "%v", tc.args)
		require.Contains(t, errOut, tc.want, "%v", tc.args)
		require.Contains(t, errOut, "Usage: go run ./bench", "%v", tc.args)
	}
	code, _, errOut := bench(t, context.Background(), "-h")
	require.Equal(t, 0, code)
	require.Contains(t, errOut, "-scenario")
}

// With no -duration, a cell runs 1s on a redis-server the bench starts
// (the default run, 25 cells, ends in about half a minute), 2s on the
// embedded miniredis and 3s on a server of the user's, and at least three
// -hold; a given -duration stands.
func TestDefaultDuration(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{[]string{"-start", "redis-server"}, time.Second},
		{[]string{"-start", "miniredis"}, 2 * time.Second},
		{[]string{"-redis", "127.0.0.1:1"}, 3 * time.Second},
		{[]string{"-cluster", "127.0.0.1:1"}, 3 * time.Second},
		{[]string{"-duration", "2s"}, 2 * time.Second},
		{[]string{"-redis", "127.0.0.1:1", "-duration", "500ms"}, 500 * time.Millisecond},
		{[]string{"-start", "redis-server", "-hold", "2s"}, 6 * time.Second},
		{[]string{"-redis", "127.0.0.1:1", "-hold", "500ms"}, 3 * time.Second},
	} {
		cfg, err := parseConfig(tc.args, io.Discard)
		require.NoError(t, err, "%v", tc.args)
		require.Equal(t, tc.want, cfg.duration, "%v", tc.args)
	}
}

func TestUnreachableRedis(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // a loopback port that nobody listens on

	code, out, errOut := bench(t, context.Background(), append(tinyCells, "-redis", addr)...)
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Equal(t, 1, strings.Count(errOut, "\n"), "one line:\n%s", errOut)
	require.Contains(t, errOut, "bench: cannot reach Redis at "+addr)
}

// TestInterrupt cancels the run as its second cell starts, as Ctrl-C does:
// the first cell's row is printed, the second's is not, and the status is 130.
func TestInterrupt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout bytes.Buffer
	stderr := &cancelOn{needle: "[2/", cancel: cancel}
	code := run(ctx, append(tiny, "-out", "", "-locks", "rlock", "-workers", "4,5"), &stdout, stderr)
	require.Equal(t, 130, code)
	out := stdout.String()
	require.Equal(t, 1, strings.Count(out, "rlock        4"), "the finished row only:\n%s", out)
	require.Contains(t, out, "interrupted: the rows above are the cells that finished")
}

// TestHarnessCountsViolations: the harness does not trust the lock. With no
// lock at all, workers are inside together, and the run reports it.
func TestHarnessCountsViolations(t *testing.T) {
	ctx := context.Background()
	cfg, err := parseConfig([]string{"-start", "miniredis", "-duration", "100ms", "-locks", "none", "-scenario", "seckill"}, io.Discard)
	require.NoError(t, err)
	b, err := connect(ctx, cfg)
	require.NoError(t, err)
	defer b.close()
	f, err := openFleet(ctx, b, cfg, contenders(cfg)[0], 4, 1, 2, "rcbench-test", "k")
	require.NoError(t, err)
	row := runMutex(ctx, f, cfg, contenders(cfg)[0])
	require.NoError(t, f.close())
	require.Positive(t, row.ME, "4 workers holding 1ms each with no lock overlap")
	res := &results{Mutex: []mutexRow{row}, Seckill: []seckillRow{{Lock: "rlock", Oversold: 1}},
		RWLock: []rwRow{{Mix: "read-mostly 95%", common: common{Lock: "rrwlock", Workers: 4, Procs: 2}, ME: 1}}}
	require.Len(t, res.violations(), 3)
	require.Contains(t, res.violations()[1], "rwlock read-mostly 95% rrwlock, 4 workers on 2 Clients: 1 mutual-exclusion")
}

// cancelOn is a writer that calls cancel once it has been written needle.
type cancelOn struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	needle string
	cancel context.CancelFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	if strings.Contains(c.buf.String(), c.needle) {
		c.cancel()
	}
	return len(p), nil
}

// TestRealRedis runs against a redis-server: the backend is named, the locks
// exclude, and the run deletes every key it made.
func TestRealRedis(t *testing.T) {
	srv := redistest.Real(t)
	dir := t.TempDir()
	code, out, errOut := bench(t, context.Background(), append(tinyCells, "-redis", srv.Addr, "-out", dir,
		"-scenario", "all", "-mixes", "95", "-orders", "40", "-concurrency", "8", "-stock", "10")...)
	require.Equal(t, 0, code, "stderr:\n%s", errOut)
	require.Contains(t, out, "backend: Redis at "+srv.Addr+" (redis ")
	res := readResults(t, filepath.Join(dir, "results.json"))
	for _, m := range res.Mutex {
		require.Zero(t, m.ME, "%s, %d workers", m.Lock, m.Workers)
		require.NotNil(t, m.ServerUs, "%s, %d workers: server time from INFO commandstats", m.Lock, m.Workers)
		require.Positive(t, *m.ServerUs, "%s, %d workers", m.Lock, m.Workers)
	}
	require.Len(t, res.RWLock, 4)
	for _, m := range res.RWLock {
		require.Zero(t, m.ME, "rwlock %s, %d workers", m.Lock, m.Workers)
		require.Positive(t, m.Acquisitions, "rwlock %s, %d workers", m.Lock, m.Workers)
	}
	require.Len(t, res.Semaphore, 6)
	for _, m := range res.Semaphore {
		require.Zero(t, m.OverLimit, "semaphore %s, %d workers", m.Lock, m.Workers)
		require.Positive(t, m.Acquisitions, "semaphore %s, %d workers", m.Lock, m.Workers)
	}
	for _, k := range res.Seckill {
		if k.Lock != "none" {
			require.Zero(t, k.Oversold, "%s", k.Lock)
		}
	}
	require.NotEmpty(t, res.RateLimit)
	for _, m := range res.RateLimit {
		require.Positive(t, m.Admitted, "ratelimit %s, %d workers", m.Lock, m.Workers)
		require.LessOrEqual(t, float64(m.Admitted), m.Bound, "ratelimit %s, %d workers: over burst + rate x duration", m.Lock, m.Workers)
	}
	keys, err := srv.Client(t).Keys(context.Background(), "*").Result()
	require.NoError(t, err)
	require.Empty(t, keys, "the run's keys are deleted")
}

func readResults(t *testing.T, path string) results {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var res results
	require.NoError(t, json.Unmarshal(b, &res))
	return res
}

// The default -procs runs each worker count in two shapes, one Client per
// worker and all on one Client, once where they are the same (1 worker).
func TestPlanShapes(t *testing.T) {
	cfg, err := parseConfig([]string{"-workers", "1,8", "-locks", "rlock,redsync"}, io.Discard)
	require.NoError(t, err)
	var got []string
	for _, c := range plan(cfg) {
		got = append(got, c.String())
	}
	require.Equal(t, []string{
		"mutex rlock, 1 worker", "mutex redsync, 1 worker",
		"mutex rlock, 8 workers on 8 Clients", "mutex redsync, 8 workers on 8 Clients",
		"mutex rlock, 8 workers on 1 Client", "mutex redsync, 8 workers on 1 Client",
	}, got)
	cfg, err = parseConfig([]string{"-workers", "4", "-procs", "2,w,8,2", "-locks", "rlock"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, []int{2, 0, 8}, cfg.procs)
	got = got[:0]
	for _, c := range plan(cfg) {
		got = append(got, c.String())
	}
	require.Equal(t, []string{"mutex rlock, 4 workers on 2 Clients", "mutex rlock, 4 workers on 4 Clients"}, got)
}

// Lists take "all" among other names, and repeats count once.
func TestFlagLists(t *testing.T) {
	cfg, err := parseConfig([]string{"-scenario", "all,mutex", "-workers", "5,5,2", "-locks", "rlock,rlock", "-out", ""}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, []string{"mutex", "rwlock", "semaphore", "seckill", "ratelimit"}, cfg.scenarios, "all but capacity")
	require.Equal(t, []int{5, 2}, cfg.workers)
	require.Equal(t, []string{"rlock"}, cfg.locks)
}

// -metrics prints the redcoord Clients' events as OpenTelemetry metrics
// after the table; -clean first deletes what earlier runs left behind.
func TestMetricsAndClean(t *testing.T) {
	srv := redistest.Real(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	require.NoError(t, rdb.Set(ctx, "rcbench-killed:{x}:fence", "1", 0).Err())
	code, out, errOut := bench(t, ctx, append(tinyCells, "-redis", srv.Addr, "-out", "", "-locks", "rlock", "-metrics", "-clean")...)
	require.Zero(t, code, errOut)
	require.Contains(t, out, "metrics (redcoordotel")
	require.Contains(t, out, "redcoord.wait")
	require.Contains(t, out, "primitive=rlock")
	require.Zero(t, rdb.Exists(ctx, "rcbench-killed:{x}:fence").Val(), "-clean deleted the leftover")
}

// An -out folder that cannot be written is reported before the run.
func TestOutCheckedFirst(t *testing.T) {
	code, out, errOut := bench(t, context.Background(), append(tiny, "-out", "/proc/nope")...)
	require.Equal(t, 2, code)
	require.Empty(t, out)
	require.Contains(t, errOut, `-out "/proc/nope"`)
}

// A cell that runs on says so every interval, and stops saying so when it
// ends.
func TestStillRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		bar := newProgress(&buf, "auto", 3) // not a terminal: plain lines
		bar.start("seckill 100 orders")
		stop := stillRunning(bar, "seckill 100 orders", 10*time.Second)
		time.Sleep(25 * time.Second)
		stop()
		time.Sleep(time.Minute)
		require.Equal(t, 2, strings.Count(buf.String(), "still running"), buf.String())
		require.Contains(t, buf.String(), "bench: [1/3] seckill 100 orders: still running, 20s")
	})
}

// The run's estimate counts its cells, words one cell as such, keeps a
// sub-second total, and says what seckill cells run for.
func TestEstimate(t *testing.T) {
	mutex, seckill := cell{scenario: "mutex"}, cell{scenario: "seckill"}
	for _, tc := range []struct {
		cells []cell
		d     time.Duration
		want  string
	}{
		{[]cell{mutex}, 6 * time.Second, "1 cell, 1 of 6s each: about 6s"},
		{[]cell{mutex, mutex, mutex}, 100 * time.Millisecond, "3 cells, 3 of 100ms each: about 300ms"},
		{make([]cell, 25), 3 * time.Second, "25 cells, 25 of 3s each: about 1m15s (-duration, -workers and -procs shorten it)"},
		{[]cell{mutex, seckill, seckill}, time.Second, "3 cells, 1 of 1s each: about 1s; 2 seckill cells, each running until its orders are done (an order waits at most -order-timeout 30s)"},
		{[]cell{seckill}, time.Second, "1 cell; 1 seckill cell, running until its orders are done (an order waits at most -order-timeout 30s)"},
	} {
		require.Equal(t, tc.want, estimate(tc.cells, tc.d, 30*time.Second))
	}
}

// A rate below 10 a second keeps its tenths: a 2s hold is 0.5/s, not 0.
func TestRate(t *testing.T) {
	for v, want := range map[float64]string{0.5: "0.5", 9.96: "10.0", 10: "10", 748.4: "748"} {
		require.Equal(t, want, rate(v), "%v", v)
	}
}

// TestCellLeavesNoKeys: each cell's keys are deleted as it ends, so that
// no cell runs beside the markers and fences of the cells before it (on
// the embedded miniredis they slow every command).
func TestCellLeavesNoKeys(t *testing.T) {
	ctx := context.Background()
	cfg, err := parseConfig([]string{"-start", "miniredis", "-duration", "100ms", "-workers", "4", "-procs", "2", "-locks", "rlock,rfairlock"}, io.Discard)
	require.NoError(t, err)
	cfg.logger = slog.New(slog.DiscardHandler)
	b, err := connect(ctx, cfg)
	require.NoError(t, err)
	defer b.close()
	res := newResults(cfg, b)
	for i, c := range plan(cfg) {
		require.NoError(t, measure(ctx, b, cfg, c, "rcbench-test", fmt.Sprintf("mutex:%d", i), res))
		require.Positive(t, res.Mutex[i].Acquisitions, "%s", c)
		require.Empty(t, b.mini.Keys(), "%s left keys behind", c)
	}
}
