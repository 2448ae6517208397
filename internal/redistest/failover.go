package redistest

import (
	"context"
	"os"
	"syscall"
	"testing"
)

// The helpers below make a failover lose writes on purpose, as a crash
// does: [Cluster.Failover] cannot, because a manual failover waits until the
// replica has every write the master acknowledged.

// Stop suspends the node at addr with SIGSTOP: its sockets stay open, but it
// reads, applies and answers nothing, a replica not even its replication
// stream, until [Cluster.Cont]. Keep the pause under the cluster's node
// timeout (1 s), or the other nodes start flagging it as failing. The
// t.Cleanup of [StartCluster] kills a stopped node as well. It calls t.Fatal
// if addr is not a live node of c.
func (c *Cluster) Stop(t testing.TB, addr string) {
	t.Helper()
	c.signal(t, addr, syscall.SIGSTOP)
}

// Cont resumes a node that [Cluster.Stop] suspended. It calls t.Fatal if
// addr is not a live node of c.
func (c *Cluster) Cont(t testing.TB, addr string) {
	t.Helper()
	c.signal(t, addr, syscall.SIGCONT)
}

func (c *Cluster) signal(t testing.TB, addr string, sig os.Signal) {
	t.Helper()
	for _, p := range c.nodes {
		if p.addr != addr || !c.alive(addr) {
			continue
		}
		if err := p.cmd.Process.Signal(sig); err != nil {
			t.Fatalf("redistest: signal %v to %s: %v", sig, addr, err)
		}
		return
	}
	t.Fatalf("redistest: signal %v: %s is not a live node of this cluster %v", sig, addr, c.Addrs())
}

// CutReplicas closes the replication links of the master at addr (CLIENT
// KILL TYPE replica). A replica that is running reconnects at once and syncs
// again; one that [Cluster.Stop] suspended cannot, so the writes the master
// acknowledges meanwhile reach no replica. It returns how many links it
// closed, and calls t.Fatal if the command fails.
func (c *Cluster) CutReplicas(t testing.TB, addr string) int {
	t.Helper()
	rdb, ok := c.admin[addr]
	if !ok || !c.alive(addr) {
		t.Fatalf("redistest: CutReplicas: %s is not a live node of this cluster %v", addr, c.Addrs())
	}
	n, err := rdb.Do(context.Background(), "CLIENT", "KILL", "TYPE", "replica").Int()
	if err != nil {
		t.Fatalf("redistest: CLIENT KILL TYPE replica on %s: %v", addr, err)
	}
	return n
}

// Takeover promotes the replica at addr with CLUSTER FAILOVER TAKEOVER: the
// replica claims its master's slots under a new config epoch at once,
// without asking its master or the other masters, and without waiting for
// the writes its master acknowledged but has not sent it yet, which are lost
// (so are those the old master acknowledges until it hears of the takeover,
// a moment later, and becomes a replica of the new one). This is what
// happens when a crashed master's replica takes over, minus the seconds
// spent noticing the crash.
//
// The replica is a master when Takeover returns (Redis runs the takeover
// inside the command); the old master, if alive, has not necessarily heard
// of it yet: [Cluster.WaitHealthy] waits until it has rejoined as a replica.
// Takeover calls t.Fatal if the command fails, for example because addr is
// a master.
func (c *Cluster) Takeover(t testing.TB, addr string) {
	t.Helper()
	rdb, ok := c.admin[addr]
	if !ok || !c.alive(addr) {
		t.Fatalf("redistest: Takeover: %s is not a live node of this cluster %v", addr, c.Addrs())
	}
	if err := rdb.Do(context.Background(), "CLUSTER", "FAILOVER", "TAKEOVER").Err(); err != nil {
		t.Fatalf("redistest: CLUSTER FAILOVER TAKEOVER on %s: %v", addr, err)
	}
}
