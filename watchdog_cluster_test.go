package redcoord_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
)

// pipelineLog records, per node address, the pipelines a cluster client's
// node clients send.
type pipelineLog struct {
	mu   sync.Mutex
	runs map[string][]int // address → command count of each pipeline
}

func (p *pipelineLog) hook(addr string) redis.Hook { return pipelineHook{p, addr} }

type pipelineHook struct {
	p    *pipelineLog
	addr string
}

func (pipelineHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (pipelineHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h pipelineHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		renewals := 0
		for _, c := range cmds {
			if c.Name() == "evalsha" || c.Name() == "eval" {
				renewals++
			}
		}
		h.p.mu.Lock()
		h.p.runs[h.addr] = append(h.p.runs[h.addr], renewals)
		h.p.mu.Unlock()
		return next(ctx, cmds)
	}
}

func (p *pipelineLog) reset() map[string][]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.runs
	p.runs = make(map[string][]int)
	return out
}

// On Cluster the watchdog's one pipeline per tick is split per node: each
// primary gets one pipeline per tick, carrying exactly the renewals of the
// holds it serves.
func TestWatchdogPipelinePerNode(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 0)
	log := &pipelineLog{runs: make(map[string][]int)}
	rdb := cl.Client(t)
	rdb.OnNewNode(func(n *redis.Client) { n.AddHook(log.hook(n.Options().Addr)) })
	ttl := 600 * time.Millisecond
	c, err := redcoord.New(rdb, redcoord.WithLeaseTTL(ttl))
	require.NoError(t, err)
	ctx := context.Background()

	perMaster := make(map[string]int)
	var held []*rlock.Mutex
	for i := 0; len(held) < 30; i++ {
		name := fmt.Sprintf("w%d", i)
		m := cl.MasterFor("rc:{" + name + "}:lock")
		if perMaster[m] == 10 {
			continue
		}
		perMaster[m]++
		mu := rlock.New(c, name)
		require.NoError(t, mu.Lock(ctx))
		held = append(held, mu)
	}
	require.Len(t, perMaster, 3)

	// Let the first ticks load the renewal script, then watch three ticks.
	time.Sleep(ttl)
	log.reset()
	time.Sleep(ttl) // three renew intervals (ttl/3)
	runs := log.reset()
	require.Len(t, runs, 3, "every primary renews")
	for addr, sizes := range runs {
		assert.NotEmpty(t, sizes, addr)
		for _, n := range sizes {
			assert.Equal(t, 10, n, "one pipeline per tick on %s with its 10 renewals, got %v", addr, sizes)
		}
	}
	for _, mu := range held {
		select {
		case <-mu.Lost():
			t.Fatalf("%s lost", mu.Name())
		default:
		}
		require.NoError(t, mu.Unlock(ctx))
	}
	require.NoError(t, c.Close(ctx))
}
