package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
)

func TestBadNames(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{"0", "-names 0: must be at least 1"},
		{"-2", "-names -2: must be at least 1"},
		{"x", `invalid value "x" for flag -names`},
	} {
		code, out, errOut := bench(t, context.Background(), "-names", tc.value)
		require.Equal(t, 2, code, "-names %s", tc.value)
		require.Empty(t, out)
		require.Contains(t, errOut, tc.want)
		require.Contains(t, errOut, "Usage: go run ./bench")
	}
}

func TestSpreadKey(t *testing.T) {
	require.Equal(t, "mutex:0", spreadKey("mutex:0", 5, 1), "one name: the key itself")
	require.Equal(t, "mutex:0-2", spreadKey("mutex:0", 5, 3))
	require.Equal(t, "mutex:0-0", spreadKey("mutex:0", 3, 3))
}

// TestRecorderNames: workers on different names are inside together
// without a violation; two on one name are one, and so is a third on a
// semaphore's name of two places. A longer waiter on another name is not
// overtaken.
func TestRecorderNames(t *testing.T) {
	r := newRecorder(6, 3, 1, time.Second) // names: 0 1 2 0 1 2
	enter(r, 0, 1, 2)
	require.Zero(t, r.me, "one worker on each of 3 names")
	require.Equal(t, 1, r.maxInside)
	enter(r, 4)
	require.EqualValues(t, 1, r.me, "worker 4 beside worker 1 on name 1")
	require.Equal(t, 2, r.maxInside)
	r.releasing(1)
	r.releasing(4)
	enter(r, 4)
	require.EqualValues(t, 1, r.me, "worker 4 alone on name 1 again")
	for _, w := range []int{0, 2, 4} {
		r.releasing(w)
	}

	// Worker 5 (name 2) is in Redis's order since long ago; worker 3 (name
	// 0) overtakes nobody of its own name, worker 2 does.
	r.waiting[5], r.queued[5] = time.Now().Add(-time.Second), time.Now().Add(-time.Second)
	enter(r, 3)
	require.Zero(t, r.fifo, "the longer waiter is on another name")
	enter(r, 2)
	require.EqualValues(t, 1, r.fifo, "worker 2 overtook worker 5 on name 2")

	sem := newRecorder(6, 2, 2, time.Second) // 2 names of 2 places
	enter(sem, 0, 2, 1, 3)
	require.Zero(t, sem.me, "two inside each of two names")
	enter(sem, 4)
	require.EqualValues(t, 1, sem.me, "a third inside name 0")
	require.Equal(t, 3, sem.maxInside)
}

// TestHarnessCountsViolationsPerName: with no lock at all, 4 workers on 4
// names never meet, 8 on 4 names do, and the run reports it.
func TestHarnessCountsViolationsPerName(t *testing.T) {
	ctx := context.Background()
	cfg, err := parseConfig([]string{"-start", "miniredis", "-duration", "200ms", "-hold", "5ms", "-locks", "none", "-scenario", "seckill"}, io.Discard)
	require.NoError(t, err)
	b, err := connect(ctx, cfg)
	require.NoError(t, err)
	defer b.close()
	ct := contenders(cfg)[0]
	for _, tc := range []struct {
		workers, names int
		meet           bool
	}{{4, 4, false}, {8, 4, true}} {
		f, err := openFleet(ctx, b, cfg, ct, tc.workers, tc.names, 3, "rcbench-test", "k")
		require.NoError(t, err)
		row := runMutex(ctx, f, cfg, ct)
		require.NoError(t, f.close())
		require.Equal(t, tc.names, row.Names)
		res := &results{Mutex: []mutexRow{row}}
		if !tc.meet {
			require.Zero(t, row.ME, "%d workers on %d names: one a name", tc.workers, tc.names)
			require.Empty(t, res.violations())
			continue
		}
		require.Positive(t, row.ME, "%d workers on %d names, 2 a name, holding 5ms each with no lock overlap", tc.workers, tc.names)
		require.Len(t, res.violations(), 1)
		require.Contains(t, res.violations()[0], "none, 8 workers on 3 Clients:")
	}
}

// TestNamesTable runs the mutex and semaphore scenarios over 3 names: the
// names are in the table's title, a column and the JSON; a cell with fewer
// workers than names uses one name a worker.
func TestNamesTable(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := bench(t, context.Background(), append(tiny, "-names", "3", "-locks", "rlock,rfairlock",
		"-scenario", "mutex,semaphore", "-permits", "1", "-out", dir)...)
	require.Equal(t, 0, code, "stderr:\n%s", errOut)
	require.Contains(t, out, "\nmutex: worker i on lock name i mod names, each worker holds it")
	require.Contains(t, out, "\nsemaphore: worker i on semaphore i mod names, each of 1 permits;")
	require.Regexp(t, `(?m)^\s*lock\s+workers\s+clients\s+names\s+acq/s\s`, out)
	for _, lock := range []string{"rlock", "rfairlock", "rsemaphore", "rsemaphore-fair", "rsemaphore-expirable"} {
		require.Regexp(t, `(?m)^\s*`+lock+`\s+1\s+1\s+1\s`, out, "%s: 1 worker on 1 Client on 1 name", lock)
		require.Regexp(t, `(?m)^\s*`+lock+`\s+4\s+2\s+3\s`, out, "%s: 4 workers on 2 Clients over 3 names", lock)
	}
	require.Contains(t, errOut, "mutex rlock, 4 workers on 2 Clients over 3 names")

	res := readResults(t, dir+"/results.json")
	require.Len(t, res.Mutex, 4)
	require.Len(t, res.Semaphore, 6)
	rows := append(commons(res.Mutex), commons(res.Semaphore)...)
	for _, m := range rows {
		require.Equal(t, map[int]int{1: 0, 4: 3}[m.Workers], m.Names, "%s, %d workers", m.Lock, m.Workers)
		require.Zero(t, m.Errors, "%s, %d workers: %s", m.Lock, m.Workers, m.ErrorSample)
		require.Positive(t, m.Acquisitions, "%s, %d workers", m.Lock, m.Workers)
	}
	for _, m := range res.Mutex {
		require.Zero(t, m.ME, "%s, %d workers", m.Lock, m.Workers)
	}
	for _, m := range res.Semaphore {
		require.Zero(t, m.OverLimit, "semaphore %s, %d workers", m.Lock, m.Workers)
		require.Equal(t, 1, m.MaxInside, "%s, %d workers: one permit a name, and max inside counts one name", m.Lock, m.Workers)
	}
}

// TestOneNameUnchanged: without -names the rows say nothing of names, in
// the table or the JSON.
func TestOneNameUnchanged(t *testing.T) {
	code, out, errOut := bench(t, context.Background(), append(tiny, "-locks", "rlock", "-out", "")...)
	require.Equal(t, 0, code, "stderr:\n%s", errOut)
	require.Contains(t, out, "\nmutex: one lock name, each worker holds it")
	require.Regexp(t, `(?m)^\s*lock\s+workers\s+clients\s+acq/s\s`, out)
	require.NotContains(t, errOut, "names")
	code, out, errOut = bench(t, context.Background(), append(tiny, "-locks", "rlock", "-out", "", "-json", "-names", "1")...)
	require.Equal(t, 0, code, "stderr:\n%s", errOut)
	require.NotContains(t, out, `"names"`)
}

// TestClusterNames runs 12 workers on 12 names on a 3-master Redis Cluster:
// the names' slots cover every master, nothing breaks exclusion, and the
// run deletes its keys on every master.
func TestClusterNames(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 0)
	masters := cl.Masters()
	require.Len(t, masters, 3)
	served := map[string]int{}
	for w := range 12 {
		served[cl.MasterFor(fmt.Sprintf("{%s}", spreadKey("mutex:0", w, 12)))]++
	}
	require.Len(t, served, 3, "12 names over 3 masters: %v", served)

	code, out, errOut := bench(t, context.Background(), "-cluster", masters[0], "-names", "12", "-workers", "12",
		"-locks", "rlock", "-duration", "300ms", "-procs", "3", "-out", "", "-json")
	require.Equal(t, 0, code, "stderr:\n%s", errOut)
	var res results
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res.Mutex, 1)
	m := res.Mutex[0]
	require.Equal(t, 12, m.Names)
	require.Zero(t, m.ME)
	require.Zero(t, m.Errors, m.ErrorSample)
	require.Zero(t, m.Starved)
	require.Contains(t, res.Backend, "Redis Cluster at "+masters[0])
	rdb := cl.Client(t)
	require.NoError(t, rdb.ForEachMaster(context.Background(), func(ctx context.Context, c *redis.Client) error {
		n, err := c.DBSize(ctx).Result()
		if err == nil && n != 0 {
			err = fmt.Errorf("%s: %d keys left", c.Options().Addr, n)
		}
		return err
	}))
}

// enter makes each of workers, in turn, wait for a write and acquire it.
func enter(r *recorder, workers ...int) {
	for _, w := range workers {
		r.wait(w, false)
		r.acquired(w)
	}
}

// commons returns the common figures of rows.
func commons[R row](rows []R) []common {
	out := make([]common, len(rows))
	for i, r := range rows {
		out[i] = r.figures()
	}
	return out
}
