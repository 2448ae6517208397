package main

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncpool "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/internal/roundtrip"
	"github.com/redcoord/redcoord/rlock"
)

// redlockServers is how many independent redis-servers BenchmarkRedLock
// spans.
const redlockServers = 5

// BenchmarkRedLock compares rlock.RedLock with redsync (its defaults: 32
// tries 50-250ms apart, 8s expiry) over the same 5 independent
// redis-servers, in the same run:
//
//	go test ./bench -run '^$' -bench RedLock -benchtime 400x -count 3
//
// "uncontended": one worker locks and unlocks a free name; an op is one
// Lock+Unlock. "contended": 8 workers, each a process of its own (its own
// go-redis clients and redcoord Clients), take one name in turn, holding
// it 1ms; an op is one acquisition. Each reports acq/s and roundtrips/op:
// the commands and pipelines sent to all 5 servers, counted by a go-redis
// hook (pub/sub excluded).
func BenchmarkRedLock(b *testing.B) {
	srvs := make([]*redistest.Server, redlockServers)
	for i := range srvs {
		srvs[i] = redistest.Real(b)
	}
	for _, shape := range []struct {
		name    string
		workers int
		hold    time.Duration
	}{{"uncontended", 1, 0}, {"contended", 8, time.Millisecond}} {
		for _, lib := range []string{"redsync", "rlock.RedLock"} {
			b.Run(shape.name+"/"+lib, func(b *testing.B) {
				trips := &roundtrip.Counter{}
				lockers := make([]locker, shape.workers)
				for w := range lockers {
					lockers[w] = openRedLocker(b, srvs, lib, trips)
				}
				var left atomic.Int64
				left.Store(int64(b.N))
				ctx := context.Background()
				trips.Reset()
				start := time.Now()
				var wg sync.WaitGroup
				for _, l := range lockers {
					wg.Go(func() {
						for left.Add(-1) >= 0 {
							if err := l.Lock(ctx); err != nil {
								b.Error(err)
								return
							}
							time.Sleep(shape.hold)
							if err := l.Unlock(ctx); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "acq/s")
				b.ReportMetric(float64(trips.Load())/float64(b.N), "roundtrips/op")
			})
		}
	}
}

// openRedLocker returns one worker's lock on the name "redlock" over srvs,
// in a process of its own: go-redis clients counted by trips, and for
// rlock.RedLock a redcoord Client per server, closed by b.Cleanup.
func openRedLocker(b *testing.B, srvs []*redistest.Server, lib string, trips *roundtrip.Counter) locker {
	rdbs := make([]*redis.Client, len(srvs))
	for i, s := range srvs {
		rdbs[i] = s.Client(b)
		rdbs[i].AddHook(trips)
	}
	if lib == "redsync" {
		pools := make([]redsyncpool.Pool, len(rdbs))
		for i, rdb := range rdbs {
			pools[i] = goredis.NewPool(rdb)
		}
		return redsyncLock{redsync.New(pools...).NewMutex("redsync:redlock")}
	}
	cs := make([]*redcoord.Client, len(rdbs))
	for i, rdb := range rdbs {
		c, err := redcoord.New(rdb)
		require.NoError(b, err)
		b.Cleanup(func() { _ = c.Close(context.Background()) })
		cs[i] = c
	}
	return rlock.NewRedLock(cs, "redlock")
}
