package main

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
)

// capacityTiny are flags for a capacity run of well under a second per
// shape: one run, three workers in the parallel shape, cells of 50ms.
var capacityTiny = []string{"-scenario", "capacity", "-duration", "50ms", "-capacity-workers", "3", "-progress", "off"}

// On miniredis, which has no INFO cpu and no commandstats, every kind runs
// in both shapes for every run, and the server's columns say n/a.
func TestCapacityOnMiniredis(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := bench(t, context.Background(), append(capacityTiny, "-start", "miniredis", "-runs", "2", "-out", dir)...)
	require.Equal(t, 0, code, "stderr:\n%s", errOut)
	res := readResults(t, filepath.Join(dir, "results.json"))
	require.Len(t, res.Capacity, 2*2*len(capacityKinds), "two runs of two shapes of every kind")
	seen := map[string]int{}
	for _, r := range res.Capacity {
		require.Positive(t, r.Cycles, "%s, %d workers, run %d", r.Lock, r.Workers, r.Run)
		require.Zero(t, r.Errors, "%s, %d workers: %s", r.Lock, r.Workers, r.ErrorSample)
		require.Nil(t, r.CPUUs, "miniredis has no INFO cpu")
		require.Nil(t, r.CmdUs, "miniredis keeps no commandstats")
		require.GreaterOrEqual(t, r.RoundTrips, 2.0, "%s: a Lock and an Unlock", r.Lock)
		require.Positive(t, r.Allocs)
		seen[r.Lock]++
	}
	for _, k := range capacityKinds {
		require.Equal(t, 4, seen[k], k)
	}
	require.Equal(t, 2, res.Settings.Runs)
	for _, k := range capacityKinds {
		for _, w := range []string{"1", "3"} {
			require.Regexp(t, `(?m)^\s*`+w+`\s+`+k+`\s+\d+\s+\d\.\d\d\s+n/a\s+n/a\s+n/a\s+n/a\s+n/a\s+\d\.\d\d\s+\d+\.\d\s*$`, out,
				"a line for %s at %s workers, the server's columns n/a", k, w)
		}
	}
	require.NotContains(t, out, "\nmutex:", "the capacity scenario runs alone")
}

// On a redis-server, the server's CPU and commandstats are read per cell,
// and every redcoord kind's scripts show in the script column.
func TestCapacityOnRedisServer(t *testing.T) {
	srv := redistest.Real(t)
	dir := t.TempDir()
	code, _, errOut := bench(t, context.Background(), append(capacityTiny, "-redis", srv.Addr, "-runs", "1", "-out", dir)...)
	require.Equal(t, 0, code, "stderr:\n%s", errOut)
	res := readResults(t, filepath.Join(dir, "results.json"))
	require.Len(t, res.Capacity, 2*len(capacityKinds))
	for _, r := range res.Capacity {
		require.Positive(t, r.Cycles, "%s, %d workers", r.Lock, r.Workers)
		require.NotNil(t, r.CPUUs, "%s: INFO cpu", r.Lock)
		require.NotNil(t, r.CmdUs, "%s: commandstats", r.Lock)
		require.Positive(t, *r.CmdUs, r.Lock)
		if r.Lock != "redislock" { // redislock releases with a script too, but takes with SET alone
			require.NotNil(t, r.ScriptUs, "%s runs a script", r.Lock)
		}
	}
}

// The summary takes medians over the runs and each run's ratio to redsync's
// in the same run and shape.
func TestCapacitySummary(t *testing.T) {
	row := func(lock string, workers, run int, rate, cpu float64) capacityRow {
		return capacityRow{Lock: lock, Workers: workers, Run: run, Cycles: 1, Rate: rate, CPUUs: &cpu}
	}
	rows := []capacityRow{
		row("redsync", 32, 1, 100, 10), row("rlock", 32, 1, 50, 30),
		row("redsync", 32, 2, 200, 20), row("rlock", 32, 2, 100, 30),
		row("redsync", 32, 3, 100, 10), row("rlock", 32, 3, 100, 12),
		row("redsync", 1, 1, 1, 1), row("rlock", 1, 1, 1, 1000), // another shape: not compared
	}
	s, ok := capacitySummary(rows, "rlock", 32)
	require.True(t, ok)
	require.Equal(t, 3, s.runs)
	require.Equal(t, 100.0, s.rate)
	require.Equal(t, 30.0, *s.cpu)
	require.Equal(t, 12.0, *s.cpuLo)
	require.Equal(t, 30.0, *s.cpuHi)
	require.Equal(t, 1.5, *s.xCPU, "ratios 3, 1.5, 1.2: the median")
	require.Equal(t, 0.5, *s.xRate, "ratios 0.5, 0.5, 1")
	_, ok = capacitySummary(rows, "rfairlock", 32)
	require.False(t, ok)
}

// "all" is every scenario but capacity, which is asked for by name; the
// default run is the mutex scenario alone.
func TestCapacityByNameOnly(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"mutex"}},
		{[]string{"-scenario", "all"}, []string{"mutex", "rwlock", "semaphore", "seckill", "ratelimit"}},
		{[]string{"-scenario", "capacity"}, []string{"capacity"}},
		{[]string{"-scenario", "all,capacity"}, scenarioNames},
	} {
		cfg, err := parseConfig(append(c.args, "-start", "miniredis"), io.Discard)
		require.NoError(t, err)
		require.Equal(t, c.want, cfg.scenarios, "%v", c.args)
	}
	cfg, err := parseConfig([]string{"-scenario", "capacity", "-runs", "2", "-capacity-workers", "4", "-start", "miniredis"}, io.Discard)
	require.NoError(t, err)
	cells := plan(cfg)
	require.Len(t, cells, 2*2*len(capacityKinds))
	require.Equal(t, "redsync", cells[0].ct.name, "the first run starts with redsync")
	require.Equal(t, "redislock", cells[2*len(capacityKinds)].ct.name, "the second one kind further along")
	for _, c := range cells {
		require.Equal(t, c.workers, c.names)
		require.Equal(t, c.workers, c.procs, "each worker on its own Client")
	}
	_, err = parseConfig([]string{"-scenario", "capacity", "-runs", "0"}, io.Discard)
	require.ErrorContains(t, err, "-runs 0: must be at least 1")
}
