package redcoord_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
)

// renewTTL is the lease TTL of the renewal tests: a renewal every two
// seconds, so that a hold outlives a few renewals missed while a slot moves
// on a loaded machine.
const renewTTL = 6 * time.Second

// With WithWaitReplicas, the watchdog counts a renewal only once a replica
// has acknowledged it: after a failover the promoted replica has the lease
// as the last acknowledged renewal left it, so the holder must not count on
// more. A replica that stops acknowledging (paused) makes the hold Lost
// within a TTL (less lease.Margin) of its last acknowledged renewal, though
// the primary still has it (Unlock then deletes it there, and reports the
// hold lost all the same); a replica that misses one
// renewal and catches up before the TTL runs out costs nothing.
func TestWaitReplicasRenewals(t *testing.T) {
	ctx := context.Background()
	pair := redistest.StartReplicated(t)
	rdb := pair.Primary.Client(t)
	c := locktest.NewClient(t, rdb, redcoord.WithWaitReplicas(1, 500*time.Millisecond), redcoord.WithLeaseTTL(renewTTL))

	t.Run("a missed renewal", func(t *testing.T) {
		lock := rlock.New(c, "missed")
		acked(t, func() error { return lock.Lock(ctx) })
		pair.PauseReplica(t)
		time.Sleep(renewTTL/3 + renewTTL/6) // the first renewal goes unacknowledged
		pair.ResumeReplica(t)               // the second is acknowledged
		time.Sleep(2 * renewTTL)
		assert.False(t, locktest.IsClosed(lock.Lost()), "the hold outlived two TTLs")
		stands(t, lock.Unlock(ctx))
	})

	t.Run("a replica that stops acknowledging", func(t *testing.T) {
		lock := rlock.New(c, "stopped")
		sent := time.Now()
		acked(t, func() error { return lock.Lock(ctx) })
		pair.PauseReplica(t)
		defer pair.ResumeReplica(t)
		select {
		case <-lock.Lost():
		case <-time.After(3 * renewTTL):
			t.Fatalf("the hold is not Lost %v after its last acknowledged renewal", 3*renewTTL)
		}
		assert.GreaterOrEqual(t, time.Since(sent), renewTTL-lease.Margin(renewTTL), "Lost not before the TTL (less the margin) of the acquire")
		locked, err := lock.IsLocked(ctx)
		require.NoError(t, err)
		assert.True(t, locked, "the primary still has the hold: renewals reached it")
		err = lock.Unlock(ctx)
		assert.ErrorIs(t, err, redcoord.ErrLeaseLost, "a hold once Lost is reported lost on release")
		assert.ErrorIs(t, err, redcoord.ErrNotHeld)
		locked, err = lock.IsLocked(ctx)
		require.NoError(t, err)
		assert.False(t, locked, "the release deleted what the primary still had")
	})
}

// On Cluster, each primary's renewals end with a WAIT of their own, on that
// primary's connection: one master whose replica stops acknowledging loses
// its holds, and only its own; the holds on the other masters, whose
// replicas acknowledge, live on, one of them through a move of its slot.
func TestWaitReplicasRenewalsPerShard(t *testing.T) {
	// A renewal every three seconds: the holds on the other masters must
	// outlive the renewals a slot's move and a stopped replica's WAITs delay
	// on a loaded 2-core machine.
	const shardTTL = 9 * time.Second
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3, 1)
	rdb := cl.Client(t)
	sent := &waitsTo{}
	rdb.OnNewNode(func(n *redis.Client) { n.AddHook(&waitHook{addr: n.Options().Addr, log: sent}) })
	c := locktest.NewClient(t, rdb, redcoord.WithWaitReplicas(1, 500*time.Millisecond), redcoord.WithLeaseTTL(shardTTL))

	masters := cl.Masters()
	locks := map[string]*rlock.Mutex{} // by master
	for i := 0; len(locks) < len(masters) && i < 1000; i++ {
		name := fmt.Sprintf("renew-%d", i)
		if m := cl.MasterFor("rc:{" + name + "}:lock"); locks[m] == nil {
			locks[m] = rlock.New(c, name)
			acked(t, func() error { return locks[m].Lock(ctx) })
		}
	}
	require.Len(t, locks, len(masters), "a name on every master")
	sent.take()
	time.Sleep(shardTTL/3 + shardTTL/6)
	assert.ElementsMatch(t, masters, slices.Compact(slices.Sorted(slices.Values(sent.take()))), "the renewals' WAITs, one per master")

	// A slot that moves: the renewal answered MOVED goes on to the new
	// master in the same tick, and its WAIT with it.
	moved := locks[masters[1]].Name()
	slot, err := rdb.ClusterKeySlot(ctx, "rc:{"+moved+"}:lock").Result()
	require.NoError(t, err)
	cl.MoveSlot(t, int(slot), masters[2])

	stopped := masters[0]
	replica := cl.ReplicasOf(stopped)
	require.Len(t, replica, 1)
	cl.Stop(t, replica[0])
	defer cl.Cont(t, replica[0])
	select {
	case <-locks[stopped].Lost():
	case <-time.After(3 * shardTTL):
		t.Fatalf("the hold on %s, whose replica is stopped, is not Lost after %v", stopped, 3*shardTTL)
	}
	time.Sleep(shardTTL)
	for _, m := range masters[1:] {
		assert.False(t, locktest.IsClosed(locks[m].Lost()), "the hold on %s, whose replica acknowledges", m)
		stands(t, locks[m].Unlock(ctx))
	}
}
