package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// chartRows is a small run: three contenders at 8 and 64 workers. rlock is
// fair, redsync is skewed towards a few workers, and redislock's waits are
// all under the chart's floor at 8 workers.
func chartRows() []mutexRow {
	waits := func(scale float64) []quantile {
		out := make([]quantile, len(distQuantiles))
		for i, q := range distQuantiles {
			out[i] = quantile{Q: q, Ms: scale * (q/10 + 1)}
		}
		return out
	}
	perWorker := func(n int, skew bool) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = 100
			if skew {
				out[i] = int64(1000 / (i + 1)) // a few workers get most
			}
		}
		return out
	}
	var rows []mutexRow
	for _, n := range []int{8, 64} {
		for _, c := range []struct {
			lock  string
			skew  bool
			scale float64
		}{{"rlock", false, 0.5}, {"redsync", true, 3}, {"redislock", true, 0}} {
			pw := perWorker(n, c.skew)
			var sum int64
			for _, v := range pw {
				sum += v
			}
			rows = append(rows, mutexRow{common: common{Lock: c.lock, Workers: n, Acquisitions: sum,
				PerWorker: pw, WaitDist: waits(c.scale)}})
		}
	}
	return rows
}

func TestChart(t *testing.T) {
	var buf bytes.Buffer
	if err := writeChart(&buf, chartRows(), "mutex: 3 contenders"); err != nil {
		t.Fatal(err)
	}
	svg := buf.String()
	if !strings.HasPrefix(svg, "<?xml") && !strings.Contains(svg, "<svg") {
		t.Fatalf("not an SVG: %.100q", svg)
	}
	for _, want := range []string{"rlock", "redsync", "redislock", "equal share",
		"64 workers", "mutex: 3 contenders", "99.9", "max"} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
	if strings.Contains(svg, "8 workers") {
		t.Error("chart shows 8 workers; want only the largest count, 64")
	}
}

func TestChartNothing(t *testing.T) {
	for name, rows := range map[string][]mutexRow{
		"empty":           nil,
		"no acquisitions": {{common: common{Lock: "rlock", Workers: 8, PerWorker: make([]int64, 8)}}},
	} {
		var buf bytes.Buffer
		if err := writeChart(&buf, rows, "t"); err == nil {
			t.Errorf("%s: no error", name)
		}
		if buf.Len() != 0 {
			t.Errorf("%s: wrote %d bytes", name, buf.Len())
		}
	}
}

func TestRWChart(t *testing.T) {
	var rows []rwRow
	for _, pct := range []int{95, 50} {
		for _, n := range []int{1, 8} {
			for i, lock := range []string{"rrwlock", "rlock"} {
				rows = append(rows, rwRow{ReadPct: pct,
					common: common{Lock: lock, Workers: n, Acquisitions: 100, AcqPerSec: float64(100 * n / (i + 1))}})
			}
		}
	}
	rows = rows[:len(rows)-1] // a failed cell: a missing bar
	var buf bytes.Buffer
	require.NoError(t, writeRWChart(&buf, rows, "rwlock: 2 contenders"))
	for _, want := range []string{"<svg", "rrwlock", "rlock", "read-mostly 95% reads", "write-heavy 50% reads",
		"rwlock: 2 contenders", "workers"} {
		require.Contains(t, buf.String(), want)
	}

	buf.Reset()
	require.Error(t, writeRWChart(&buf, []rwRow{{common: common{Lock: "rlock", Workers: 1}}}, "t"))
	require.Zero(t, buf.Len())
}
