package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRWLockTable runs the rwlock scenario: a row for each mix, worker count
// and contender, in the table, the JSON and the chart.
func TestRWLockTable(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := bench(t, context.Background(), append(tiny, "-scenario", "rwlock", "-out", dir)...)
	require.Equal(t, 0, code, "stderr:\n%s", errOut)
	require.Contains(t, out, "\nrwlock: one lock name")
	for _, mix := range []string{"read-mostly 95%", "write-heavy 50%"} {
		for _, lock := range []string{"rrwlock", "rlock"} {
			for _, w := range []string{"1", "4"} {
				require.Regexp(t, `(?m)^\s*`+mix+`\s+`+lock+`\s+`+w+`\s`, out, "no row for %s %s at %s workers", mix, lock, w)
			}
		}
	}
	require.Contains(t, out, "shared reads, writer preference", "rrwlock is in the legend")
	require.NotContains(t, out, "redsync", "the mutex contenders did not run")
	require.Contains(t, errOut, "[8/8] rwlock write-heavy 50% rlock, 4 workers")

	res := readResults(t, filepath.Join(dir, "results.json"))
	require.Empty(t, res.Mutex)
	require.Len(t, res.RWLock, 8)
	for _, m := range res.RWLock {
		require.Zero(t, m.ME, "%s %s, %d workers: mutual-exclusion violations", m.Mix, m.Lock, m.Workers)
		require.Zero(t, m.Errors, "%s %s, %d workers: %s", m.Mix, m.Lock, m.Workers, m.ErrorSample)
		require.Positive(t, m.Acquisitions, "%s %s, %d workers", m.Mix, m.Lock, m.Workers)
		require.Equal(t, m.Acquisitions, m.Reads+m.Writes)
		require.Len(t, m.PerWorker, m.Workers)
		require.LessOrEqual(t, m.MaxReaders, m.Workers)
		require.Positive(t, m.XRlock, "%s %s, %d workers: a ratio to the rlock row", m.Mix, m.Lock, m.Workers)
		if m.Lock == "rlock" {
			require.LessOrEqual(t, m.MaxReaders, 1, "%s: rlock takes reads exclusively", m.Mix)
			require.InDelta(t, 1, m.XRlock, 1e-9)
		}
	}
	svg, err := os.ReadFile(filepath.Join(dir, "rwlock.svg"))
	require.NoError(t, err)
	for _, want := range []string{"<svg", "rrwlock", "read-mostly 95%", "write-heavy 50%"} {
		require.Contains(t, string(svg), want)
	}
	_, err = os.Stat(filepath.Join(dir, "waits.svg"))
	require.ErrorIs(t, err, os.ErrNotExist, "no mutex rows, no waits chart")
}

// TestRecorderReadsShare: readers together are no violation; a writer with
// anyone, or a reader with a writer, is.
func TestRecorderReadsShare(t *testing.T) {
	r := newRecorder(3, 1, 1, time.Second)
	r.wait(0, true)
	r.acquired(0)
	r.wait(1, true)
	r.acquired(1)
	require.Zero(t, r.me, "two readers")
	require.Equal(t, 2, r.maxReaders)
	r.wait(2, false)
	r.acquired(2)
	require.EqualValues(t, 1, r.me, "a writer with readers")
	r.releasing(0)
	r.releasing(1)
	r.wait(0, true)
	r.acquired(0)
	require.EqualValues(t, 2, r.me, "a reader with a writer")
	r.releasing(0)
	r.releasing(2)
	r.wait(2, false)
	r.acquired(2)
	require.EqualValues(t, 2, r.me, "a writer alone")
	require.EqualValues(t, 3, r.reads)
	require.EqualValues(t, 2, r.writeWaits.TotalCount())
	require.EqualValues(t, 5, r.waits.TotalCount())
}

func TestCompare(t *testing.T) {
	row := func(pct, workers int, lock string, acq float64) rwRow {
		return rwRow{ReadPct: pct, common: common{Lock: lock, Workers: workers, AcqPerSec: acq}}
	}
	rows := []rwRow{row(95, 8, "rrwlock", 300), row(95, 8, "rlock", 100), row(50, 8, "rrwlock", 50),
		row(50, 8, "rlock", 0), row(95, 1, "rrwlock", 10)}
	compare(rows)
	for i, want := range []float64{3, 1, 0, 0, 0} {
		require.InDelta(t, want, rows[i].XRlock, 1e-9, "row %d", i)
	}
}

func TestMixName(t *testing.T) {
	for pct, want := range map[int]string{100: "read-only 100%", 95: "read-mostly 95%", 51: "read-mostly 51%",
		50: "write-heavy 50%", 1: "write-heavy 1%", 0: "write-only 0%"} {
		require.Equal(t, want, mixName(pct))
	}
}
