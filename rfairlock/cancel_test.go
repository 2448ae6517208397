package rfairlock_test

import (
	"context"
	"errors"
	"math/rand/v2"
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
	"github.com/redcoord/redcoord/rfairlock"
)

// 400 waits cancelled at random moments (before the first try, while
// queued, as a grant races in) among waits that succeed: afterwards the
// queue, the heartbeat zset and PUBSUB CHANNELS are empty, the lock is free,
// and no hold was ever shared.
func TestCancelledWaitsLeaveNothing(t *testing.T) {
	const (
		procs     = 4
		workers   = 16
		cancelled = 400
	)
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx := context.Background()
		var (
			rdbs    []*redis.Client
			clients []*redcoord.Client
		)
		for i := 0; i < procs; i++ {
			rdb := srv.Client(t, func(o *redis.Options) { o.PoolSize = 2 * workers / procs })
			rdbs = append(rdbs, rdb)
			clients = append(clients, locktest.NewClient(t, rdb))
		}
		var (
			gaveUp, got, holders atomic.Int32
			wg                   sync.WaitGroup
		)
		errs := make(chan error, workers)
		for w := 0; w < workers; w++ {
			m := rfairlock.New(clients[w%procs], "cancel")
			wg.Add(1)
			go func() {
				defer wg.Done()
				for gaveUp.Load() < cancelled {
					wctx, cancel := context.WithCancel(ctx)
					timer := time.AfterFunc(time.Duration(rand.Int64N(int64(20*time.Millisecond))), cancel)
					err := m.Lock(wctx)
					timer.Stop()
					cancel()
					switch {
					case err == nil:
						got.Add(1)
						if holders.Add(1) != 1 {
							errs <- errors.New("two holders at once")
						}
						time.Sleep(time.Duration(rand.Int64N(int64(time.Millisecond))))
						holders.Add(-1)
						if err := m.Unlock(ctx); err != nil {
							errs <- err
							return
						}
					case errors.Is(err, redcoord.ErrNotAcquired) && errors.Is(err, context.Canceled):
						gaveUp.Add(1)
					default:
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
		t.Logf("%d waits cancelled, %d acquired", gaveUp.Load(), got.Load())
		require.GreaterOrEqual(t, gaveUp.Load(), int32(cancelled))
		assert.Greater(t, got.Load(), int32(0), "no wait succeeded: the test proves little")

		rdb := rdbs[0]
		assert.Equal(t, []string{"rc:{cancel}:fence"}, locktest.Keys(t, rdb), "queue, heartbeats and lock all gone")
		for _, c := range clients {
			if h, _ := c.Hub(); h != nil {
				assert.Zero(t, h.Stats().Waiters)
			}
		}
		locktest.Eventually(t, func() bool { return len(rdb.PubSubChannels(ctx, "rc:{*").Val()) == 0 }, "PUBSUB CHANNELS empty")
		ok, err := rfairlock.New(clients[0], "cancel").TryLock(ctx)
		require.NoError(t, err)
		assert.True(t, ok, "the lock is free and nobody queued")
	})
}
