package redcoord_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/internal/scripts"
	"github.com/redcoord/redcoord/rfairlock"
	"github.com/redcoord/redcoord/rlock"
)

// BenchmarkHandOffParts times one hand-off between two Clients on a real
// redis-server, from the holder's call to Unlock to the waiter's return
// from Lock, and splits it into its parts (medians over b.N hand-offs, in
// µs, all measured in the same run):
//
//   - gap: the whole hand-off, Unlock called to Lock returned;
//   - unlock: the holder's Unlock, call to return (one round trip);
//   - script: the release script in Redis, its PUBLISH included (SLOWLOG's
//     duration of its EVALSHA);
//   - publish: a PUBLISH to one subscriber alone (SLOWLOG's mean), the
//     script's part of it;
//   - to-hub: Unlock called to the waiter's Hub reading the message (the
//     request's way to Redis, the script, the message's way back);
//   - rtt: a PING's round trip, of which the request's and the message's
//     ways are about half each;
//   - wake: a goroutine woken through a channel, as the Hub wakes the
//     waiting Lock (in-process, without Redis);
//   - woken: the Hub's read to Lock's return (Event.Woken: the goroutine's
//     wake, the try the waiter makes, if any, and the record of the hold).
//
// The parts that are derived, not timed: the message's way back is about
// to-hub - script - rtt/2, and what the waiter does once awake, woken -
// wake.
func BenchmarkHandOffParts(b *testing.B) {
	srv := redistest.Real(b)
	for _, k := range []struct {
		kind, release string
		open          func(c *redcoord.Client, name string) exclusive
	}{
		{"rlock", "lock_release", func(c *redcoord.Client, name string) exclusive { return rlock.New(c, name) }},
		{"rfairlock", "fair_release", func(c *redcoord.Client, name string) exclusive { return rfairlock.New(c, name) }},
	} {
		b.Run(k.kind, func(b *testing.B) {
			handOffParts(b, srv, k.kind, k.release, k.open)
		})
	}
}

func handOffParts(b *testing.B, srv *redistest.Server, kind, release string,
	open func(c *redcoord.Client, name string) exclusive) {
	ctx := context.Background()
	rdb := srv.Client(b)
	admin := srv.Client(b)
	name := "parts-" + kind
	var ev events
	c := [2]*redcoord.Client{
		locktest.NewClient(b, rdb, redcoord.WithObserver(ev.add)),
		locktest.NewClient(b, srv.Client(b), redcoord.WithObserver(ev.add)),
	}
	m := [2]exclusive{open(c[0], name), open(c[1], name)}
	// Warm: each Client has held, so its channels are subscribed.
	for _, x := range m {
		require.NoError(b, x.Lock(ctx))
		require.NoError(b, x.Unlock(ctx))
	}
	require.NoError(b, admin.ConfigSet(ctx, "slowlog-log-slower-than", "0").Err())
	require.NoError(b, admin.ConfigSet(ctx, "slowlog-max-len", "100000").Err())
	b.Cleanup(func() { admin.ConfigSet(context.Background(), "slowlog-log-slower-than", "10000") })

	var gap, unlock, toHub, woken []time.Duration
	require.NoError(b, m[0].Lock(ctx))
	require.NoError(b, admin.SlowLogReset(ctx).Err())
	b.ResetTimer()
	for i := range b.N {
		holder, waiter := m[i%2], m[(i+1)%2]
		waits := len(ev.of(redcoord.Waiting))
		got := make(chan time.Time, 1)
		go func() {
			if err := waiter.Lock(ctx); err != nil {
				b.Error(err)
			}
			got <- time.Now()
		}()
		for range 1000 { // the waiter waits, subscribed
			if len(ev.of(redcoord.Waiting)) > waits {
				break
			}
			time.Sleep(50 * time.Microsecond)
		}
		time.Sleep(2 * time.Millisecond)
		acquired := len(ev.of(redcoord.Acquired))
		start := time.Now()
		require.NoError(b, holder.Unlock(ctx))
		unlock = append(unlock, time.Since(start))
		var end time.Time
		select {
		case end = <-got:
		case <-time.After(10 * time.Second):
			b.Fatal("the waiter's Lock did not return")
		}
		gap = append(gap, end.Sub(start))
		if e := ev.of(redcoord.Acquired); len(e) > acquired && e[len(e)-1].Woken > 0 {
			w := e[len(e)-1].Woken
			woken = append(woken, w)
			toHub = append(toHub, end.Add(-w).Sub(start))
		}
	}
	b.StopTimer()
	script := slowlogMedian(b, admin, scripts.SHA(release))
	publish, rtt := publishAndRTT(b, srv, admin)
	report := func(d time.Duration, unit string) { b.ReportMetric(float64(d.Nanoseconds())/1e3, unit) }
	report(median(gap), "gap-µs")
	report(median(unlock), "unlock-µs")
	report(script, "script-µs")
	report(publish, "publish-µs")
	report(median(toHub), "to-hub-µs")
	report(rtt, "rtt-µs")
	report(channelWake(), "wake-µs")
	report(median(woken), "woken-µs")
}

// slowlogMedian returns the median duration SLOWLOG recorded for EVALSHA
// of sha.
func slowlogMedian(b *testing.B, admin *redis.Client, sha string) time.Duration {
	ctx := context.Background()
	logs, err := admin.SlowLogGet(ctx, -1).Result()
	require.NoError(b, err)
	var ds []time.Duration
	for _, l := range logs {
		if len(l.Args) > 1 && strings.EqualFold(l.Args[0], "evalsha") && l.Args[1] == sha {
			ds = append(ds, l.Duration)
		}
	}
	return median(ds)
}

// publishAndRTT returns the mean SLOWLOG duration of a PUBLISH to one
// subscriber, and the median round trip of a PING, over 200 of each.
func publishAndRTT(b *testing.B, srv *redistest.Server, admin *redis.Client) (publish, rtt time.Duration) {
	ctx := context.Background()
	sub := srv.Client(b).Subscribe(ctx, "parts-publish")
	defer sub.Close()
	_, err := sub.Receive(ctx)
	require.NoError(b, err)
	require.NoError(b, admin.SlowLogReset(ctx).Err())
	var rtts []time.Duration
	for range 200 {
		require.NoError(b, admin.Publish(ctx, "parts-publish", "x").Err())
		start := time.Now()
		require.NoError(b, admin.Ping(ctx).Err())
		rtts = append(rtts, time.Since(start))
	}
	logs, err := admin.SlowLogGet(ctx, -1).Result()
	require.NoError(b, err)
	// SLOWLOG counts whole µs, and a PUBLISH takes about one: the mean.
	var sum time.Duration
	n := 0
	for _, l := range logs {
		if len(l.Args) > 0 && strings.EqualFold(l.Args[0], "publish") {
			sum += l.Duration
			n++
		}
	}
	if n > 0 {
		publish = sum / time.Duration(n)
	}
	return publish, median(rtts)
}

// channelWake returns the median time from a send on a channel to the
// return of the goroutine that waited on it, over 1000 wakes.
func channelWake() time.Duration {
	c := make(chan time.Time)
	var ds []time.Duration
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 1000 {
			ds = append(ds, time.Since(<-c))
		}
	}()
	for range 1000 {
		c <- time.Now()
		time.Sleep(20 * time.Microsecond) // the receiver waits again
	}
	wg.Wait()
	return median(ds)
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
