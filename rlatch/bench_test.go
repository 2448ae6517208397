package rlatch_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlatch"
)

// BenchmarkOpen measures, on a real redis-server, the time from the call
// to the CountDown that opens a latch to the return of each of its 64
// waiters, spread over 8 processes (Clients): p50 and max over every
// waiter of every iteration, beside one idle EVALSHA round trip (a Count)
// measured in the same run. Run it with a -benchtime of a few dozen
// iterations (-benchtime 30x): each starts 64 waits.
func BenchmarkOpen(b *testing.B) {
	const procs, waiters = 8, 64
	srv := redistest.Real(b)
	cs := make([]*redcoord.Client, procs)
	for i := range cs {
		cs[i] = locktest.NewClient(b, srv.Client(b))
	}
	ctx := context.Background()
	setter := rlatch.New(cs[0], "open")

	var rtts []time.Duration
	for range 200 {
		t0 := time.Now()
		if _, err := setter.Count(ctx); err != nil && !isNotSet(err) {
			b.Fatal(err)
		}
		rtts = append(rtts, time.Since(t0))
	}

	var opens []time.Duration
	returned := make(chan time.Time, waiters)
	for b.Loop() {
		if ok, err := setter.TrySetCount(ctx, 1); err != nil || !ok {
			b.Fatalf("TrySetCount: %v %v", ok, err)
		}
		for i := range waiters {
			l := rlatch.New(cs[i%procs], "open", rlatch.WithMaxPollInterval(time.Hour))
			go func() {
				if err := l.Wait(ctx); err != nil {
					b.Error(err)
				}
				returned <- time.Now()
			}()
		}
		locktest.Eventually(b, func() bool { return hubWaiters(b, cs) == waiters }, "every waiter on its Hub")
		time.Sleep(10 * time.Millisecond) // and past its check after subscribing
		t0 := time.Now()
		if err := setter.CountDown(ctx); err != nil {
			b.Fatal(err)
		}
		for range waiters {
			opens = append(opens, (<-returned).Sub(t0))
		}
	}
	b.StopTimer()
	rtt := locktest.Quantile(rtts, 0.5)
	b.ReportMetric(float64(rtt.Microseconds()), "idle-rtt-p50-µs")
	b.ReportMetric(float64(locktest.Quantile(opens, 0.5).Microseconds()), "open-p50-µs")
	b.ReportMetric(float64(locktest.Quantile(opens, 1).Microseconds()), "open-max-µs")
	b.ReportMetric(float64(locktest.Quantile(opens, 0.5))/float64(rtt), "open-p50/rtt")
	b.ReportMetric(0, "ns/op") // the loop's time includes starting 64 waits; the figures above say what matters
}

func isNotSet(err error) bool { return errors.Is(err, redcoord.ErrNotSet) }

// hubWaiters sums the Hubs' registered waiters.
func hubWaiters(b *testing.B, cs []*redcoord.Client) int {
	n := 0
	for _, c := range cs {
		h, err := c.Hub()
		if err != nil {
			b.Fatal(err)
		}
		n += h.Stats().Waiters
	}
	return n
}
