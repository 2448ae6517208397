package rlock_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
)

// BenchmarkUncontended takes and releases a free rlock on a redis-server of
// its own: round trips and allocations per Lock+Unlock. The comparisons with
// other Redis locks, uncontended and contended, are in the bench module:
//
//	go test ./bench -run '^$' -bench . -benchtime 3000x
func BenchmarkUncontended(b *testing.B) {
	rdb := redistest.Real(b).Client(b)
	rt := &redistest.RoundTrips{}
	rdb.AddHook(rt)
	ctx := context.Background()
	m := rlock.New(locktest.NewClient(b, rdb), "bench:uncontended")
	require.NoError(b, m.Lock(ctx))
	require.NoError(b, m.Unlock(ctx))
	rt.Reset()
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Lock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := m.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rt.Load())/float64(b.N), "roundtrips/op")
}
