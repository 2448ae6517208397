package rfairlock_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rfairlock"
)

// pipelines is a go-redis hook that records the length of every pipeline.
type pipelines struct {
	mu      sync.Mutex
	lengths []int
}

func (p *pipelines) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (p *pipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (p *pipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		p.mu.Lock()
		p.lengths = append(p.lengths, len(cmds))
		p.mu.Unlock()
		return next(ctx, cmds)
	}
}

func (p *pipelines) take() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.lengths
	p.lengths = nil
	return l
}

// Waiters keep their places through an hour-long hold: the watchdog renews
// their heartbeats in the same pipelined tick as the Client's leases (here
// a lock the waiting process holds on another name), one round trip per tick.
func TestHeartbeatsKeepWaitersQueued(t *testing.T) {
	locktest.InBubble(t, 2, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		pipes := &pipelines{}
		ps[1].RDB.AddHook(pipes)
		holder := rfairlock.New(ps[0].C, "n")
		other := rfairlock.New(ps[1].C, "other")
		first := rfairlock.New(ps[1].C, "n", rfairlock.WithMaxPollInterval(time.Hour))
		second := rfairlock.New(ps[1].C, "n", rfairlock.WithMaxPollInterval(time.Hour))
		require.NoError(t, holder.Lock(ctx))
		require.NoError(t, other.Lock(ctx)) // starts the waiting process's watchdog
		firstDone := lockAsync(first)
		synctest.Wait()
		secondDone := lockAsync(second)
		synctest.Wait()
		time.Sleep(15 * time.Second) // past the first tick (it loads the scripts), between two ticks
		pipes.take()

		time.Sleep(time.Hour) // 120 heartbeat TTLs
		ticks := pipes.take()
		assert.Len(t, ticks, int(time.Hour/(ps[1].C.LeaseTTL()/3)), "one pipeline per tick")
		for i, n := range ticks {
			require.Equal(t, 3, n, "tick %d: a tick renews the hold and both heartbeats together", i)
		}
		for want, m := range []*rfairlock.Mutex{first, second} {
			p, err := m.Position(ctx)
			require.NoError(t, err)
			assert.Equal(t, want+1, p, "a waiter lost its place")
		}
		require.NoError(t, holder.Unlock(ctx))
		r := <-firstDone
		require.NoError(t, r.err)
		require.NoError(t, first.Unlock(ctx))
		r = <-secondDone
		require.NoError(t, r.err)
		require.NoError(t, second.Unlock(ctx))
		require.NoError(t, other.Unlock(ctx))
		time.Sleep(time.Minute)
		assert.Empty(t, pipes.take(), "heartbeats stop when the waits end")
	})
}
