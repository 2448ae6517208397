package rsemaphore_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rsemaphore"
)

func TestSmoke(t *testing.T) {
	for _, fair := range []bool{false, true} {
		redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
			rdb := srv.Client(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var opts []rsemaphore.Option
			if fair {
				opts = append(opts, rsemaphore.WithFair())
			}
			first := rsemaphore.New(locktest.NewClient(t, rdb), "pool", opts...)
			ok, err := first.TrySetPermits(ctx, 5)
			require.NoError(t, err)
			require.True(t, ok)
			var in, peak atomic.Int64
			var wg sync.WaitGroup
			start := time.Now()
			for c := 0; c < 4; c++ {
				cl := locktest.NewClient(t, rdb)
				for w := 0; w < 8; w++ {
					s := rsemaphore.New(cl, "pool", opts...)
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; i < 50; i++ {
							n := int64(1 + (i+w)%3)
							if err := s.Acquire(ctx, n); err != nil {
								t.Error(err)
								return
							}
							v := in.Add(n)
							if v > peak.Load() {
								peak.Store(v)
							}
							assert.LessOrEqual(t, v, int64(5))
							time.Sleep(time.Millisecond)
							in.Add(-n)
							if err := s.Release(ctx, n); err != nil {
								t.Error(err)
								return
							}
						}
					}()
				}
			}
			wg.Wait()
			n, err := first.Available(ctx)
			require.NoError(t, err)
			assert.Equal(t, int64(5), n)
			t.Logf("fair=%v peak %d in %v", fair, peak.Load(), time.Since(start))
		})
	}
}

func TestSmokeExpirable(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s := rsemaphore.NewExpirable(locktest.NewClient(t, rdb), "x")
		require.NoError(t, s.SetPermits(ctx, 2))
		p1, err := s.Acquire(ctx, rsemaphore.AcquireOptions{})
		require.NoError(t, err)
		p2, err := s.Acquire(ctx, rsemaphore.AcquireOptions{Lease: 200 * time.Millisecond})
		require.NoError(t, err)
		start := time.Now()
		p3, err := s.Acquire(ctx, rsemaphore.AcquireOptions{})
		require.NoError(t, err)
		t.Log("waited", time.Since(start), p1.Token, p2.Token, p3.Token)
		<-p2.Lost()
		assert.ErrorIs(t, s.Release(ctx, p2), redcoord.ErrLeaseLost)
		require.NoError(t, s.Release(ctx, p1))
		require.NoError(t, s.Release(ctx, p3))
		n, err := s.Available(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(2), n)
	})
}
