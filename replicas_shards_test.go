package redcoord_test

import (
	"context"
	"slices"
	"sync"
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

// On Cluster, WAIT must reach the primary that ran the script: every
// primitive acquires and releases with WithWaitReplicas on names served by
// each of three masters (a keyless WAIT sent through the ClusterClient
// would go to any master, whose replica acknowledges nothing of it). When
// the slot of a name has moved since the client last looked, the script
// is sent on to the new master, which has the replica that acknowledges it.
func TestWaitReplicasOnEveryShard(t *testing.T) {
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3, 1)
	rdb := cl.Client(t)
	sent := &waitsTo{}
	rdb.OnNewNode(func(n *redis.Client) { n.AddHook(&waitHook{addr: n.Options().Addr, log: sent}) })
	c := locktest.NewClient(t, rdb, redcoord.WithWaitReplicas(1, 2*time.Second))

	shards := map[string]bool{}
	for _, s := range subjects(t, c, "shard-") {
		m := cl.MasterFor("rc:{" + s.name + "}:lock")
		shards[m] = true
		sent.take()
		require.NoError(t, s.acquire(ctx), "%s on %s", s.kind, m)
		require.NoError(t, s.release(ctx), "%s on %s", s.kind, m)
		// (twice more on a master that has not loaded the script yet: EVALSHA, then EVAL)
		assert.Equal(t, []string{m}, slices.Compact(sent.take()), "%s: where WAIT went", s.kind)
	}
	require.Len(t, shards, 3, "names on every master")

	// Move a name's slot to another master behind the client's back.
	key := "rc:{moved}:lock"
	lock := rlock.New(c, "moved")
	require.NoError(t, lock.Lock(ctx))
	require.NoError(t, lock.Unlock(ctx))
	from := cl.MasterFor(key)
	to := slices.DeleteFunc(cl.Masters(), func(m string) bool { return m == from })[0]
	slot, err := rdb.ClusterKeySlot(ctx, key).Result()
	require.NoError(t, err)
	cl.MoveSlot(t, int(slot), to)
	require.Equal(t, to, cl.MasterFor(key))
	sent.take()
	require.NoError(t, lock.Lock(ctx), "sent on from %s to %s", from, to)
	assert.Equal(t, []string{from, to}, slices.Compact(sent.take()), "where WAIT went: MOVED, then the new master")
	locked, err := lock.IsLocked(ctx)
	require.NoError(t, err)
	assert.True(t, locked)
	require.NoError(t, lock.Unlock(ctx))
}

// waitsTo logs the node of every WAIT, in order.
type waitsTo struct {
	mu    sync.Mutex // guards addrs
	addrs []string
}

// take returns the log and empties it.
func (w *waitsTo) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	a := w.addrs
	w.addrs = nil
	return a
}

// waitHook is a go-redis hook on one cluster node's client that logs the
// node's address for every WAIT it sends.
type waitHook struct {
	addr string
	log  *waitsTo
}

func (h *waitHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *waitHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.record(cmd)
		return next(ctx, cmd)
	}
}

func (h *waitHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.record(cmd)
		}
		return next(ctx, cmds)
	}
}

func (h *waitHook) record(cmd redis.Cmder) {
	if cmd.Name() == "wait" {
		h.log.mu.Lock()
		h.log.addrs = append(h.log.addrs, h.addr)
		h.log.mu.Unlock()
	}
}
