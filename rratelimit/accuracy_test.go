package rratelimit_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rratelimit"
)

// checkBound fails t if some span of admissions holds more events than
// lim allows in it, Burst + Events*span/Per, wherever it starts: no
// window edge lets twice the rate through. times are sorted.
func checkBound(t *testing.T, lim rratelimit.Limit, times []time.Time) {
	t.Helper()
	interval := lim.Per / time.Duration(lim.Events)
	for i := range times {
		for j := i; j < len(times); j++ {
			span := times[j].Sub(times[i])
			allowed := max(lim.Burst, 1) + int(span/interval)
			if j-i+1 > allowed {
				t.Fatalf("%d events in %v (from %v to %v): at most %d allowed", j-i+1, span, times[i].Format("15:04:05.000000"), times[j].Format("15:04:05.000000"), allowed)
			}
		}
	}
}

// 16 goroutines on 4 handles in 2 processes call Allow at random times
// for 2 simulated seconds: the admissions never exceed the bound in any
// span, and the limiter admits all it may (each second, with callers
// always there, it admits the rate).
func TestAllowAccuracyUnderConcurrency(t *testing.T) {
	locktest.InBubble(t, 2, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		limit := rratelimit.Limit{Events: 50, Per: time.Second, Burst: 5}
		var mu sync.Mutex
		var admitted []time.Time
		start := time.Now()
		end := start.Add(2 * time.Second)
		var wg sync.WaitGroup
		for h := range 4 {
			lim := rratelimit.New(ps[h%2].C, "acc", limit)
			for g := range 4 {
				rng := rand.New(rand.NewPCG(uint64(h), uint64(g)))
				wg.Go(func() {
					for time.Now().Before(end) {
						r, err := lim.Allow(ctx)
						if !assert.NoError(t, err) {
							return
						}
						if r.Allowed {
							mu.Lock()
							admitted = append(admitted, time.Now())
							mu.Unlock()
						}
						time.Sleep(time.Duration(rng.IntN(20000)) * time.Microsecond)
					}
				})
			}
		}
		wg.Wait()
		slices.SortFunc(admitted, func(a, b time.Time) int { return a.Compare(b) })
		checkBound(t, limit, admitted)
		// 5 at once, then one every 20ms for 2s, less what the callers'
		// random gaps leave unused.
		assert.GreaterOrEqual(t, len(admitted), 5+90, "the limiter admits about what it may")
		assert.LessOrEqual(t, len(admitted), 5+100)
	})
}

// 16 goroutines on 4 handles in 2 processes each Wait 10 times: every
// wait returns at its own slot, one interval after the one before, in the
// order the waits reached Redis (the bubble's clock: exact), and the
// bound holds.
func TestWaitAccuracyAndOrder(t *testing.T) {
	locktest.InBubble(t, 2, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		limit := rratelimit.PerSecond(100) // burst 1: every 10ms
		var mu sync.Mutex
		var admitted []time.Time
		start := time.Now()
		var wg sync.WaitGroup
		for h := range 4 {
			lim := rratelimit.New(ps[h%2].C, "acc", limit)
			for range 4 {
				wg.Go(func() {
					for range 10 {
						if !assert.NoError(t, lim.Wait(ctx)) {
							return
						}
						mu.Lock()
						admitted = append(admitted, time.Now())
						mu.Unlock()
					}
				})
			}
		}
		wg.Wait()
		require.Len(t, admitted, 160)
		slices.SortFunc(admitted, func(a, b time.Time) int { return a.Compare(b) })
		checkBound(t, limit, admitted)
		for i, at := range admitted {
			assert.Equal(t, time.Duration(i)*10*time.Millisecond, at.Sub(start), "wait %d", i)
		}
	})
}
