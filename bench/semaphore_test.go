package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSemaphoreTable runs the semaphore scenario on 2 permits: a row for
// each contender at each worker count, in the table, the JSON and the chart.
func TestSemaphoreTable(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := bench(t, context.Background(), append(tiny, "-scenario", "semaphore", "-permits", "2", "-out", dir)...)
	require.Equal(t, 0, code, "stderr:\n%s", errOut)
	require.Contains(t, out, "\nsemaphore: one semaphore of 2 permits")
	for _, lock := range semLockNames {
		for _, w := range []string{"1", "4"} {
			require.Regexp(t, `(?m)^\s*`+lock+`\s+`+w+`\s`, out, "no row for %s at %s workers", lock, w)
		}
	}
	require.Contains(t, out, "rsemaphore WithFair: a FIFO queue", "the fair semaphore is in the legend")
	require.NotContains(t, out, "redsync", "the mutex contenders did not run")
	require.Contains(t, errOut, "[6/6] semaphore rsemaphore-expirable, 4 workers")

	raw, err := os.ReadFile(filepath.Join(dir, "results.json"))
	require.NoError(t, err)
	require.Contains(t, string(raw), `"over_limit_violations": 0`)
	require.NotContains(t, string(raw), "mutual_exclusion", "semaphore rows count over-limit violations only")
	res := readResults(t, filepath.Join(dir, "results.json"))
	require.Empty(t, res.Mutex)
	require.Equal(t, 2, res.Settings.Permits)
	require.Len(t, res.Semaphore, 6)
	for i, m := range res.Semaphore {
		require.Equal(t, semLockNames[i%3], m.Lock, "unfair first, then fair, then expirable, at each worker count")
		require.Equal(t, []int{1, 4}[i/3], m.Workers)
		require.Equal(t, 2, m.Permits)
		require.Zero(t, m.OverLimit, "%s, %d workers: over-limit violations", m.Lock, m.Workers)
		require.Zero(t, m.Errors, "%s, %d workers: %s", m.Lock, m.Workers, m.ErrorSample)
		require.Positive(t, m.Acquisitions, "%s, %d workers", m.Lock, m.Workers)
		require.Len(t, m.PerWorker, m.Workers)
		require.NotEmpty(t, m.WaitDist)
		require.LessOrEqual(t, m.MaxInside, min(2, m.Workers))
		require.Positive(t, m.MaxInside)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "semaphore.svg"))
	require.NoError(t, err)
	for _, want := range []string{"<svg", "rsemaphore-fair", "semaphore, 2 permits", "4 workers"} {
		require.Contains(t, string(svg), want)
	}
	_, err = os.Stat(filepath.Join(dir, "waits.svg"))
	require.ErrorIs(t, err, os.ErrNotExist, "no mutex rows, no waits chart")
}

func TestBadPermits(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{"0", "-permits 0: must be at least 1"},
		{"-3", "-permits -3: must be at least 1"},
		{"x", `invalid value "x" for flag -permits`},
	} {
		code, out, errOut := bench(t, context.Background(), "-scenario", "semaphore", "-permits", tc.value)
		require.Equal(t, 2, code, "-permits %s", tc.value)
		require.Empty(t, out)
		require.Contains(t, errOut, tc.want)
	}
}

// TestHarnessCountsOverLimit: the harness does not trust the semaphore. One
// that lets 4 in where the harness allows 2 is caught, and fails the run.
func TestHarnessCountsOverLimit(t *testing.T) {
	ctx := context.Background()
	args := []string{"-start", "miniredis", "-duration", "300ms", "-hold", "5ms", "-scenario", "semaphore", "-procs", "2"}
	loose, err := parseConfig(append(args, "-permits", "4"), io.Discard)
	require.NoError(t, err)
	strict, err := parseConfig(append(args, "-permits", "2"), io.Discard)
	require.NoError(t, err)
	loose.logger = slog.New(slog.DiscardHandler)
	b, err := connect(ctx, loose)
	require.NoError(t, err)
	defer b.close()
	ct := semContenders(loose)[0]
	f, err := openFleet(ctx, b, loose, ct, 8, 1, 2, "rcbench-test", "sem") // 4 permits in Redis
	require.NoError(t, err)
	row := runSemaphore(ctx, f, strict, ct) // 2 in the harness's count
	require.NoError(t, f.close())
	require.Positive(t, row.OverLimit, "8 workers on 4 permits, holding 5ms each, are more than 2 at once")
	require.Greater(t, row.MaxInside, 2)
	res := &results{Semaphore: []semRow{row}}
	require.Len(t, res.violations(), 1)
	require.Contains(t, res.violations()[0], "semaphore rsemaphore, 8 workers on 2 Clients:")
	require.Contains(t, res.violations()[0], "over-limit violations (more than 2 inside at once)")
}

// TestRecorderLimit: with 2 places, a third writer inside is a violation;
// an acquisition overtakes only when 2 or more longer waiters are left.
func TestRecorderLimit(t *testing.T) {
	r := newRecorder(5, 1, 2, time.Second)
	enter(r, 0, 1)
	require.Zero(t, r.me, "two inside two places")
	enter(r, 2)
	require.EqualValues(t, 1, r.me, "a third inside two places")
	require.Equal(t, 3, r.maxInside)
	for w := range 3 {
		r.releasing(w)
	}

	// Workers 3 and 4 are in Redis's order since long ago; a reply to a
	// worker that has not called Lock yet counts for nothing.
	long := time.Now().Add(-time.Second)
	r.replied(2)
	require.True(t, r.queued[2].IsZero())
	r.waiting[3], r.queued[3] = long, long
	r.wait(0, false)
	r.acquired(0)
	require.Zero(t, r.fifo, "one earlier waiter left: its grant may be on its way")
	r.waiting[4], r.queued[4] = long, long
	r.wait(1, false)
	r.replied(1)
	r.replied(1)
	r.acquired(1)
	require.EqualValues(t, 1, r.fifo, "two longer waiters left behind on two places")
	require.EqualValues(t, 1, r.me, "two inside two places again: no new violation")
}
