package main

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rfairlock"
	"github.com/redcoord/redcoord/rlock"
)

// BenchmarkHeldHeap holds heldLeases locks at once on one Client, each on
// its own name with its lease kept alive by the Client's watchdog, and
// reports the client heap they take (runtime.MemStats.HeapAlloc after a
// GC), per hold:
//
//		go test ./bench -run '^$' -bench HeldHeap -benchtime 1x -count 3
//
//	  - heap-B/hold: a handle made and locked;
//	  - handle-B/hold: the handle alone (New), before its Lock;
//	  - lease-B/hold: what Lock adds: the hold's state, its lease in the
//	    watchdog, and whatever else a held lock keeps.
//
// An op makes the handles, locks them all, reads the heap, and unlocks
// them; the time per op is of no interest.
func BenchmarkHeldHeap(b *testing.B) {
	for _, k := range []struct {
		name string
		mk   func(*redcoord.Client, string) locker
	}{
		{"rlock", func(c *redcoord.Client, name string) locker { return rlock.New(c, name) }},
		{"rfairlock", func(c *redcoord.Client, name string) locker { return rfairlock.New(c, name) }},
	} {
		b.Run(k.name, func(b *testing.B) {
			ctx := context.Background()
			srv := redistest.Real(b)
			c, err := redcoord.New(srv.Client(b), redcoord.WithPrefix("heap"))
			require.NoError(b, err)
			b.Cleanup(func() { require.NoError(b, c.Close(ctx)) })
			// Scripts loaded, the watchdog started, and as many connections
			// open as each's calls use at once: the pool's buffers are the
			// Client's, however many leases it holds.
			warm := make([]locker, 64)
			for i := range warm {
				warm[i] = k.mk(c, fmt.Sprintf("warm-%d", i))
			}
			require.NoError(b, each(warm, func(lk locker) error { return lk.Lock(ctx) }))
			require.NoError(b, each(warm, func(lk locker) error { return lk.Unlock(ctx) }))
			var total, handle, lease float64
			for b.Loop() {
				base := heapAfterGC()
				locks := make([]locker, heldLeases)
				for i := range locks {
					locks[i] = k.mk(c, fmt.Sprintf("held-%d", i))
				}
				made := heapAfterGC()
				require.NoError(b, each(locks, func(lk locker) error { return lk.Lock(ctx) }))
				held := heapAfterGC()
				runtime.KeepAlive(locks)
				require.NoError(b, each(locks, func(lk locker) error { return lk.Unlock(ctx) }))
				total += float64(held-base) / heldLeases
				handle += float64(made-base) / heldLeases
				lease += float64(held-made) / heldLeases
			}
			n := float64(b.N)
			b.ReportMetric(total/n, "heap-B/hold")
			b.ReportMetric(handle/n, "handle-B/hold")
			b.ReportMetric(lease/n, "lease-B/hold")
		})
	}
}

// heldLeases is how many holds BenchmarkHeldHeap keeps at once.
const heldLeases = 10000

// heapAfterGC returns the live heap after a full collection, in bytes, as
// a signed number so that a shrink shows.
func heapAfterGC() int64 {
	runtime.GC()
	runtime.GC() // a second pass frees what the first one's finalizers released
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// each runs f on every lock, 16 at a time, and returns the first error.
func each(locks []locker, f func(locker) error) error {
	const par = 16
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for p := range par {
		wg.Go(func() {
			for i := p; i < len(locks); i += par {
				if err := f(locks[i]); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}
