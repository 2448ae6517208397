package redistest

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// failoverAttempts bounds how often Failover sends CLUSTER FAILOVER.
	failoverAttempts = 3
	// promotionTimeout bounds the wait for one CLUSTER FAILOVER: a little
	// more than the 5 s after which Redis abandons a manual failover.
	promotionTimeout = 6 * time.Second
	// migrateBatch is how many keys one MIGRATE of MoveSlot carries.
	migrateBatch = 100
	// migrateTimeoutMs is MIGRATE's own timeout, in milliseconds.
	migrateTimeoutMs = 1000
)

// Failover promotes a replica of the master at masterAddr with CLUSTER
// FAILOVER sent to the replica: a manual failover, in which the master stops
// serving writes, the replica catches up with its replication stream, takes
// over the master's slots with a new config epoch, and the old master becomes
// its replica. No write acknowledged before is lost.
//
// Failover first waits until the cluster is healthy (see
// [Cluster.WaitHealthy]), picks the first live replica in address order, and
// returns its address once it reports role master, serves the old master's
// slots and the cluster is healthy again. Redis gives up a manual failover
// after 5 s; Failover then sends CLUSTER FAILOVER again, three times at most.
// It calls t.Fatal if masterAddr is not a live master with a live replica, or
// if the cluster does not settle within these bounds (about a minute at
// worst; about a second is usual).
func (c *Cluster) Failover(t testing.TB, masterAddr string) string {
	t.Helper()
	c.WaitHealthy(t)
	v, err := c.view()
	if err != nil {
		t.Fatal(err)
	}
	m := v.byAddr(masterAddr)
	if m == nil || !m.master || m.failed || !c.alive(masterAddr) {
		t.Fatalf("redistest: Failover(%s): not a live master; masters are %v", masterAddr, v.masters(c.alive))
	}
	slots := m.slots
	replicas := v.replicasOf(masterAddr, c.alive)
	if len(replicas) == 0 {
		t.Fatalf("redistest: Failover(%s): the master has no live replica", masterAddr)
	}
	replica := replicas[0]
	rdb := c.admin[replica]

	for attempt := 1; ; attempt++ {
		if err := rdb.ClusterFailover(context.Background()).Err(); err != nil {
			t.Fatalf("redistest: CLUSTER FAILOVER on %s: %v", replica, err)
		}
		err = poll(promotionTimeout, "replica "+replica+" to become master", func() error {
			r, err := role(rdb)
			if err == nil && r != "master" {
				err = fmt.Errorf("ROLE is %s", r)
			}
			return err
		})
		if err == nil {
			break
		}
		if attempt == failoverAttempts {
			t.Fatalf("%v (CLUSTER FAILOVER sent %d times)", err, attempt)
		}
	}

	mustPoll(t, settleTimeout, "cluster to be healthy after the failover of "+masterAddr, func() error {
		if err := c.settled(); err != nil {
			return err
		}
		v, err := c.viewOf(replica)
		if err != nil {
			return err
		}
		for _, r := range slots {
			if n := v.ownerOf(r[0]); n == nil || n.addr != replica {
				return fmt.Errorf("slot %d is not served by %s yet", r[0], replica)
			}
		}
		return nil
	})
	return replica
}

// MoveSlot moves slot, with its keys, to the master at toMaster while the
// cluster keeps serving it, as a resharding does: the target is marked
// IMPORTING and the source MIGRATING (CLUSTER SETSLOT), so a client asking
// the source for a key already moved is sent on with -ASK; the keys move in
// batches of 100 with MIGRATE ... KEYS; then CLUSTER SETSLOT NODE names the
// new owner on the target, the source and every other master, in that order.
// It returns the number of keys moved, once the cluster is healthy and every
// node agrees on the new owner.
//
// MoveSlot first waits until the cluster is healthy. Moving a slot to the
// master that serves it already returns 0 at once. It calls t.Fatal if slot
// is out of range, toMaster is not a live master, a command fails, the keys
// take more than 20 s to move (the slot is then left open: the test is over
// anyway), or the nodes do not agree on the new owner within 20 s more.
func (c *Cluster) MoveSlot(t testing.TB, slot int, toMaster string) int {
	t.Helper()
	if slot < 0 || slot >= numSlots {
		t.Fatalf("redistest: MoveSlot(%d): slot out of range [0, %d)", slot, numSlots)
	}
	c.WaitHealthy(t)
	v, err := c.view()
	if err != nil {
		t.Fatal(err)
	}
	dst := v.byAddr(toMaster)
	if dst == nil || !dst.master || dst.failed || !c.alive(toMaster) {
		t.Fatalf("redistest: MoveSlot(%d, %s): not a live master; masters are %v", slot, toMaster, v.masters(c.alive))
	}
	src := v.ownerOf(slot)
	if src == nil || !c.alive(src.addr) {
		t.Fatalf("redistest: MoveSlot(%d): no live master serves the slot", slot)
	}
	if src.addr == dst.addr {
		return 0
	}
	ctx := context.Background()
	srcC, dstC := c.admin[src.addr], c.admin[dst.addr]
	setSlot := func(rdb *redis.Client, args ...any) {
		t.Helper()
		cmd := append([]any{"CLUSTER", "SETSLOT", slot}, args...)
		if err := rdb.Do(ctx, cmd...).Err(); err != nil {
			t.Fatalf("redistest: MoveSlot: %v on %s: %v", cmd, rdb.Options().Addr, err)
		}
	}
	setSlot(dstC, "IMPORTING", src.id)
	setSlot(srcC, "MIGRATING", dst.id)

	host, port, _ := net.SplitHostPort(dst.addr)
	start := time.Now()
	moved := 0
	// The count bound is for form's sake; the time bound is the real one.
	for batch := 0; batch < numSlots*migrateBatch; batch++ {
		keys, err := srcC.ClusterGetKeysInSlot(ctx, slot, migrateBatch).Result()
		if err != nil {
			t.Fatalf("redistest: MoveSlot: CLUSTER GETKEYSINSLOT %d on %s: %v", slot, src.addr, err)
		}
		if len(keys) == 0 {
			break
		}
		if time.Since(start) > Patience(settleTimeout) {
			t.Fatalf("redistest: MoveSlot(%d): %d keys moved in %v, more are left",
				slot, moved, time.Since(start).Round(time.Millisecond))
		}
		cmd := []any{"MIGRATE", host, port, "", 0, migrateTimeoutMs, "KEYS"}
		for _, k := range keys {
			cmd = append(cmd, k)
		}
		if err := srcC.Do(ctx, cmd...).Err(); err != nil {
			t.Fatalf("redistest: MoveSlot: MIGRATE of %d keys from %s to %s: %v", len(keys), src.addr, dst.addr, err)
		}
		moved += len(keys)
	}

	setSlot(dstC, "NODE", dst.id)
	setSlot(srcC, "NODE", dst.id)
	for _, addr := range v.masters(c.alive) {
		if addr != src.addr && addr != dst.addr {
			setSlot(c.admin[addr], "NODE", dst.id)
		}
	}
	mustPoll(t, settleTimeout, fmt.Sprintf("slot %d to be served by %s", slot, dst.addr), func() error {
		if err := c.settled(); err != nil {
			return err
		}
		v, err := c.view()
		if err != nil {
			return err
		}
		if n := v.ownerOf(slot); n == nil || n.addr != dst.addr {
			return fmt.Errorf("slot %d is not served by %s yet", slot, dst.addr)
		}
		return nil
	})
	return moved
}
