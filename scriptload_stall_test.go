package redcoord_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
)

// On Cluster, a name whose primary answers at once is taken and kept while
// another primary does not answer (CLIENT PAUSE here; a stalled or
// partitioned node alike, a replica too), even when the scripts must be
// loaded again where the names live (SCRIPT FLUSH, as after a restart or a
// failover): the load that the retry needs is on the primary that runs it.

func TestClusterScriptLoadWaitsForNoOtherNode(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 1)
	ctx := context.Background()
	rdb := cl.Client(t)
	const ttl = 900 * time.Millisecond
	c := locktest.NewClient(t, rdb, redcoord.WithLeaseTTL(ttl))
	held, taken := "held", "taken"
	used := map[string]bool{
		cl.MasterFor("rc:{" + held + "}:lock"):  true,
		cl.MasterFor("rc:{" + taken + "}:lock"): true,
	}
	var other string // a primary that serves neither name
	for _, m := range cl.Masters() {
		if !used[m] {
			other = m
			break
		}
	}
	require.NotEmpty(t, other)
	h := rlock.New(c, held)
	require.NoError(t, h.Lock(ctx))

	pauser := redis.NewClient(&redis.Options{Addr: other})
	t.Cleanup(func() { _ = pauser.Close() })
	const pause = 4 * time.Second
	require.NoError(t, pauser.Do(ctx, "client", "pause", pause.Milliseconds(), "all").Err())
	paused := time.Now()
	for addr := range used { // not through rdb, which would wait for the paused node
		node := redis.NewClient(&redis.Options{Addr: addr})
		require.NoError(t, node.ScriptFlush(ctx).Err())
		require.NoError(t, node.Close())
	}

	time.Sleep(2 * ttl)
	assert.False(t, locktest.IsClosed(h.Lost()), "the hold on a healthy primary is kept")

	lctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	m := rlock.New(c, taken)
	assert.NoError(t, m.Lock(lctx), "taken while another primary is paused")
	time.Sleep(pause - time.Since(paused) + 100*time.Millisecond) // the pause is over before cleanup
}
