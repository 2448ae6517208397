package redistest

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redcoord/redcoord/internal/loopback"

	"github.com/redis/go-redis/v9"
)

const (
	// numSlots is the number of hash slots of Redis Cluster.
	numSlots = 16384
	// clusterNodeTimeout is every node's cluster-node-timeout: a node that
	// does not answer for this long is flagged failing, so a killed master's
	// replica takes over after a few seconds.
	clusterNodeTimeout = 1000 * time.Millisecond
	// createTimeout bounds redis-cli --cluster create.
	createTimeout = 30 * time.Second
)

// Cluster is a Redis Cluster of redis-server processes started by
// [StartCluster] for one test. Its methods may be called from any goroutine;
// those that take a testing.TB call t.Fatal, so they belong on the test's
// goroutine.
type Cluster struct {
	nodes []*proc                  // every node started, in start order
	admin map[string]*redis.Client // one plain client per node, for the helpers' own commands

	mu     sync.Mutex      // protects killed
	killed map[string]bool // addresses of the nodes Kill has killed
}

// StartCluster starts masters*(1+replicasPerMaster) redis-server processes in
// cluster mode on free 127.0.0.1 ports (client and bus port), each with no
// persistence, cluster-node-timeout 1000 ms and its node file in its own
// t.TempDir. It joins them with redis-cli --cluster create, which splits the
// 16384 slots evenly over the given number of masters and gives each
// replicasPerMaster replicas, and returns once every node reports
// cluster_state:ok, all nodes agree on who serves which slots and every
// replica's link to its master is up: about two seconds, at most 20 s, else
// t.Fatal.
//
// t.Cleanup kills and reaps every process, whether the test passed or not.
// StartCluster calls t.Skip if the server or its CLI is not on PATH (or
// t.Fatal when CI is set), and t.Fatal if masters < 3, which redis-cli
// refuses, or replicasPerMaster < 0.
func StartCluster(t testing.TB, masters, replicasPerMaster int) *Cluster {
	t.Helper()
	skipShort(t, "a Redis Cluster")
	if masters < 3 || replicasPerMaster < 0 {
		t.Fatalf("redistest: StartCluster(%d, %d): need at least 3 masters (redis-cli's minimum) "+
			"and no negative replica count", masters, replicasPerMaster)
	}
	server, f := serverBin(t)
	cli := lookBin(t, f.cli, f.cliPkg)

	c := &Cluster{admin: make(map[string]*redis.Client), killed: make(map[string]bool)}
	n := masters * (1 + replicasPerMaster)
	args := []string{"--cluster", "create"}
	for range n {
		p := startProc(t, server, f.server+" (cluster node)", clusterNodeArgs)
		c.nodes = append(c.nodes, p)
		args = append(args, p.addr)
		rdb := redis.NewClient(adminOptions(p.addr))
		t.Cleanup(func() { _ = rdb.Close() })
		c.admin[p.addr] = rdb
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(replicasPerMaster), "--cluster-yes")

	ctx, cancel := context.WithTimeout(context.Background(), Patience(createTimeout))
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, args...)
	cmd.WaitDelay = time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("redistest: %s --cluster create: %v\n%s", f.cli, err, out)
	}
	mustPoll(t, settleTimeout, "cluster to form", c.settled)
	return c
}

// clusterNodeArgs is the command line of one cluster node. The bus port is
// a second free port (cluster-port), not port+10000, which may be taken or
// out of range.
func clusterNodeArgs(dir string, port int) ([]string, error) {
	bus, err := loopback.FreePort()
	if err != nil {
		return nil, err
	}
	return append(serverArgs(dir, port),
		"--cluster-enabled", "yes",
		"--cluster-config-file", filepath.Join(dir, "nodes.conf"),
		"--cluster-port", strconv.Itoa(bus),
		"--cluster-node-timeout", strconv.Itoa(int(clusterNodeTimeout/time.Millisecond)),
		"--repl-diskless-sync-delay", "0", // a replica syncs at once, not after 5 s
	), nil
}

// Addrs returns the addresses of all nodes in start order, including any
// that Kill has killed.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, p := range c.nodes {
		addrs[i] = p.addr
	}
	return addrs
}

// Masters returns the addresses of the masters as the cluster reports them
// now (one live node's CLUSTER NODES), ordered by first slot; nodes flagged
// failing and nodes Kill has killed are left out. It returns nil if no live
// node answers.
func (c *Cluster) Masters() []string {
	v, err := c.view()
	if err != nil {
		return nil
	}
	return v.masters(c.alive)
}

// MasterFor returns the address of the master that serves key's slot now,
// as one live node reports it, or "" if no live node answers or the slot's
// master is failing.
func (c *Cluster) MasterFor(key string) string {
	for _, addr := range c.live() {
		slot, err := c.admin[addr].ClusterKeySlot(context.Background(), key).Result()
		if err != nil {
			continue
		}
		v, err := c.viewOf(addr)
		if err != nil {
			continue
		}
		if n := v.ownerOf(int(slot)); n != nil && c.alive(n.addr) {
			return n.addr
		}
		return ""
	}
	return ""
}

// ReplicasOf returns the sorted addresses of the live replicas of the master
// at masterAddr as the cluster reports them now, or nil if there are none or
// no live node answers.
func (c *Cluster) ReplicasOf(masterAddr string) []string {
	v, err := c.view()
	if err != nil {
		return nil
	}
	return v.replicasOf(masterAddr, c.alive)
}

// Options returns fresh cluster client options: Addrs are the nodes that
// Kill has not killed and DisableIdentity is true (redis-server 7.0 does not
// know CLIENT SETINFO). Every other field keeps go-redis's default. The
// mutators run last, in order, and may change anything.
func (c *Cluster) Options(mut ...func(*redis.ClusterOptions)) *redis.ClusterOptions {
	opt := &redis.ClusterOptions{
		Addrs:           c.live(),
		DisableIdentity: true,
	}
	for _, m := range mut {
		m(opt)
	}
	return opt
}

// Client returns a cluster client made from c.Options(mut...). It is closed by
// t.Cleanup; closing it earlier is harmless.
func (c *Cluster) Client(t testing.TB, mut ...func(*redis.ClusterOptions)) *redis.ClusterClient {
	t.Helper()
	rdb := redis.NewClusterClient(c.Options(mut...))
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Kill kills the node at addr with SIGKILL and returns once the process has
// been reaped; it does not wait for the cluster to react (see
// [Cluster.WaitHealthy]). Killing a node twice is harmless; an address that
// is not one of c's nodes is a t.Fatal.
//
// A ClusterClient made before the kill keeps sending the dead master's slots
// to it, failing with dial errors, until it reloads its slot map: go-redis
// v9.23 reloads on MOVED or READONLY replies and every
// ClusterStateReloadInterval (60 s by default), not on dial errors. Call its
// ReloadState (which reloads in the background), or set a short interval,
// when a test needs it to follow.
func (c *Cluster) Kill(t testing.TB, addr string) {
	t.Helper()
	for _, p := range c.nodes {
		if p.addr == addr {
			c.mu.Lock()
			c.killed[addr] = true
			c.mu.Unlock()
			p.kill()
			return
		}
	}
	t.Fatalf("redistest: Kill(%s): not a node of this cluster %v", addr, c.Addrs())
}

// WaitHealthy waits, at most 20 s, until every live node reports
// cluster_state:ok, no slot is open for migration, all live nodes agree on
// which live master serves which slots and which live replicas follow it,
// the live masters serve all 16384 slots, and every live replica's link to
// its master is up. After Kill of a master with a replica, that is the
// replica's promotion (a few seconds with cluster-node-timeout 1000 ms).
// After Kill of a master without one it never happens: WaitHealthy then
// calls t.Fatal.
func (c *Cluster) WaitHealthy(t testing.TB) {
	t.Helper()
	mustPoll(t, settleTimeout, "cluster to be healthy", c.settled)
}

// alive reports whether the node at addr has not been killed.
func (c *Cluster) alive(addr string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.killed[addr]
}

// live returns the addresses of the nodes not killed, in start order.
func (c *Cluster) live() []string {
	var addrs []string
	for _, p := range c.nodes {
		if c.alive(p.addr) {
			addrs = append(addrs, p.addr)
		}
	}
	return addrs
}
