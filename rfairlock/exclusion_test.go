package rfairlock_test

import (
	"context"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/internal/scripts"
	"github.com/redcoord/redcoord/rfairlock"
)

// 64 handles in 8 processes (Clients), 500 acquisitions each of one name,
// holding it 1ms: never two holders at once, no update lost, every handle
// served, and no FIFO violation: whenever a request was queued on the server
// before another was sent, it acquired first. (The counter's loads and
// stores are atomic only to keep the race detector, which cannot see the
// ordering Redis provides, quiet; the increment itself is not atomic.)
func TestExclusionAndOrderUnderContention(t *testing.T) {
	const (
		procs   = 8
		workers = 64
		perWork = 500
		hold    = time.Millisecond
	)
	if testing.Short() {
		t.Skip("32,000 acquisitions take about a minute")
	}
	srv := redistest.Real(t)
	log := newEnqueues(scripts.SHA("fair_acquire"))
	clients := make([]*redcoord.Client, procs)
	for i := range clients {
		rdb := srv.Client(t, func(o *redis.Options) { o.PoolSize = 2 * workers / procs })
		rdb.AddHook(log)
		clients[i] = locktest.NewClient(t, rdb)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	warm := rfairlock.New(clients[0], "warm-up") // loads the scripts: every first try is an EVALSHA
	require.NoError(t, warm.Lock(ctx))
	require.NoError(t, warm.Unlock(ctx))

	var (
		holders    atomic.Int32
		violations atomic.Int32
		counter    atomic.Int64 // read and written apart, under the lock
		seq        atomic.Int64 // acquisition order
		wg         sync.WaitGroup
	)
	handles := make([]*rfairlock.Mutex, workers)
	acquired := make([][]int64, workers) // per handle: the order of each of its acquisitions
	errs := make(chan error, workers)
	for w := range handles {
		handles[w] = rfairlock.New(clients[w%procs], "contended")
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := handles[w]
			for k := 0; k < perWork; k++ {
				if err := m.Lock(ctx); err != nil {
					errs <- err
					return
				}
				if holders.Add(1) != 1 {
					violations.Add(1)
				}
				acquired[w] = append(acquired[w], seq.Add(1))
				v := counter.Load()
				time.Sleep(hold)
				counter.Store(v + 1)
				holders.Add(-1)
				if err := m.Unlock(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Zero(t, violations.Load(), "overlapping holders")
	assert.Equal(t, int64(workers*perWork), counter.Load(), "lost updates")

	// Line every acquisition up with its request's first try.
	type acq struct {
		order int64
		first try
	}
	var all []acq
	for w, m := range handles {
		reqs := log.order[m.Owner()]
		require.Equal(t, perWork, len(acquired[w]), "handle %d not served in full", w)
		require.Equal(t, perWork, len(reqs), "handle %d: one request per Lock", w)
		for k, order := range acquired[w] {
			all = append(all, acq{order, log.first[reqs[k]]})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].order < all[j].order })
	// A violation: an acquisition B followed by one whose request was queued
	// before B's was even sent.
	fifo := 0
	var queuedBefore time.Time // earliest reply among the acquisitions after i
	for i := len(all) - 1; i >= 0; i-- {
		if !queuedBefore.IsZero() && queuedBefore.Before(all[i].first.sent) {
			fifo++
		}
		if queuedBefore.IsZero() || all[i].first.replied.Before(queuedBefore) {
			queuedBefore = all[i].first.replied
		}
	}
	assert.Zero(t, fifo, "FIFO violations among %d acquisitions", len(all))
	t.Logf("%d acquisitions by %d handles in %d processes, %d goroutines at the end", len(all), workers, procs, runtime.NumGoroutine())
}
