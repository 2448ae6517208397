package redistest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// One 3-master, 1-replica cluster serves all subtests, in order: starting
// one takes a few seconds.
func TestCluster(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := StartCluster(t, 3, 1)
	t.Logf("StartCluster(3, 1): %v", time.Since(start).Round(time.Millisecond))
	ctx := context.Background()

	masters := c.Masters()
	if len(c.Addrs()) != 6 || len(masters) != 3 {
		t.Fatalf("Addrs() = %v, Masters() = %v; want 6 nodes, 3 masters", c.Addrs(), masters)
	}
	seen := slices.Clone(masters)
	for _, m := range masters {
		reps := c.ReplicasOf(m)
		if len(reps) != 1 || slices.Contains(masters, reps[0]) {
			t.Fatalf("ReplicasOf(%s) = %v; want one node that is not a master", m, reps)
		}
		seen = append(seen, reps...)
	}
	slices.Sort(seen)
	if all := slices.Sorted(slices.Values(c.Addrs())); !slices.Equal(seen, all) {
		t.Fatalf("masters and replicas %v are not the nodes %v", seen, all)
	}
	for _, a := range c.Addrs() {
		if !strings.HasPrefix(a, "127.0.0.1:") {
			t.Fatalf("node address %q is not on loopback", a)
		}
	}

	rdb := c.Client(t)
	const n = 300
	for i := range n {
		if err := rdb.Set(ctx, "k"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatalf("SET k%d: %v", i, err)
		}
	}
	total := 0
	for _, m := range masters {
		size := direct(t, m).DBSize(ctx).Val()
		if size == 0 {
			t.Errorf("master %s holds no key; want keys on every master", m)
		}
		total += int(size)
	}
	if total != n {
		t.Errorf("the masters hold %d keys, want %d", total, n)
	}
	if m := c.MasterFor("k7"); direct(t, m).Exists(ctx, "k7").Val() != 1 {
		t.Errorf("MasterFor(k7) = %s, which does not hold k7", m)
	}
	readAll := func(t *testing.T, skip string) {
		t.Helper()
		for i := range n {
			key := "k" + strconv.Itoa(i)
			if got, err := rdb.Get(ctx, key).Int(); key != skip && (err != nil || got != i) {
				t.Fatalf("GET %s = %d, %v; want %d", key, got, err, i)
			}
		}
	}

	t.Run("MoveSlot", func(t *testing.T) {
		// 250 keys in one slot: three MIGRATE batches.
		const keys = 250
		key := func(i int) string { return fmt.Sprintf("{move}%d", i) }
		for i := range keys {
			if err := rdb.Set(ctx, key(i), i, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		slot := int(rdb.ClusterKeySlot(ctx, key(0)).Val())
		from := c.MasterFor(key(0))
		to := masters[(slices.Index(masters, from)+1)%len(masters)]
		start := time.Now()
		moved := c.MoveSlot(t, slot, to)
		t.Logf("MoveSlot(%d) of %d keys: %v", slot, moved, time.Since(start).Round(time.Millisecond))
		if moved != keys {
			t.Errorf("MoveSlot moved %d keys, want %d", moved, keys)
		}
		if got := c.MasterFor(key(0)); got != to {
			t.Fatalf("MasterFor after MoveSlot = %s, want %s", got, to)
		}
		if got := direct(t, to).ClusterCountKeysInSlot(ctx, slot).Val(); got != keys {
			t.Errorf("%s holds %d keys of slot %d, want %d", to, got, slot, keys)
		}
		if got := direct(t, from).ClusterCountKeysInSlot(ctx, slot).Val(); got != 0 {
			t.Errorf("the old owner %s still holds %d keys of slot %d", from, got, slot)
		}
		for i := range keys {
			if got, err := rdb.Get(ctx, key(i)).Int(); err != nil || got != i {
				t.Fatalf("GET %s after the move = %d, %v; want %d", key(i), got, err, i)
			}
		}
		if c.MoveSlot(t, slot, to) != 0 {
			t.Error("moving a slot to its owner moved keys")
		}
	})

	t.Run("Failover", func(t *testing.T) {
		old := c.MasterFor("k0")
		want := c.ReplicasOf(old)
		start := time.Now()
		promoted := c.Failover(t, old)
		t.Logf("Failover(%s): %v", old, time.Since(start).Round(time.Millisecond))
		if len(want) != 1 || promoted != want[0] {
			t.Fatalf("Failover promoted %s, want the replica %v", promoted, want)
		}
		if got := c.MasterFor("k0"); got != promoted {
			t.Fatalf("MasterFor(k0) = %s after the failover, want %s", got, promoted)
		}
		if got := c.ReplicasOf(promoted); !slices.Equal(got, []string{old}) {
			t.Errorf("ReplicasOf(%s) = %v, want the old master %s", promoted, got, old)
		}
		if r, err := role(direct(t, old)); r != "slave" {
			t.Errorf("old master's ROLE = %q, %v; want slave", r, err)
		}
		if err := rdb.Set(ctx, "k0", "after", 0).Err(); err != nil {
			t.Fatalf("SET after the failover: %v", err)
		}
		if got := direct(t, promoted).Get(ctx, "k0").Val(); got != "after" {
			t.Errorf("the new master holds k0 = %q, want after", got)
		}
		readAll(t, "k0") // a manual failover loses nothing
	})

	t.Run("Kill", func(t *testing.T) {
		victim := c.MasterFor("k1")
		heir := c.ReplicasOf(victim)
		start := time.Now()
		c.Kill(t, victim)
		c.WaitHealthy(t)
		t.Logf("Kill(%s) until healthy: %v", victim, time.Since(start).Round(time.Millisecond))
		if got := c.MasterFor("k1"); len(heir) != 1 || got != heir[0] {
			t.Fatalf("MasterFor(k1) = %s after the kill, want the replica %v", got, heir)
		}
		if got := c.Masters(); len(got) != 3 || slices.Contains(got, victim) {
			t.Fatalf("Masters() = %v after killing %s", got, victim)
		}
		// go-redis reloads its slot map on MOVED, not on dial errors: ask
		// it to (in the background) and wait until it knows the heir.
		rdb.ReloadState(ctx)
		err := poll(5*time.Second, "client to reload its slot map", func() error {
			m, err := rdb.MasterForKey(ctx, "k1")
			if err == nil && m.Options().Addr != heir[0] {
				err = fmt.Errorf("the client sends k1 to %s", m.Options().Addr)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := rdb.Set(ctx, "k1", "after", 0).Err(); err != nil {
			t.Fatalf("SET after the kill: %v", err)
		}
		if got := direct(t, heir[0]).Get(ctx, "k1").Val(); got != "after" {
			t.Errorf("the new master holds k1 = %q, want after", got)
		}
	})
}

// direct returns a plain client of one node, closed by t.Cleanup.
func direct(t testing.TB, addr string) *redis.Client {
	return (&Server{Addr: addr}).Client(t)
}

func TestStartClusterNeedsItsCli(t *testing.T) {
	skipShort(t, "StartCluster's checks") // it skips every cluster with -short
	f := chosen(t)
	server, err := exec.LookPath(f.server)
	if err != nil {
		t.Skipf("%s not installed", f.server)
	}
	bin := t.TempDir()
	if err := os.Symlink(server, filepath.Join(bin, f.server)); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)

	t.Setenv("CI", "")
	var skipped bool
	t.Run("skip", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		StartCluster(t, 3, 0)
	})
	if !skipped {
		t.Fatalf("StartCluster did not skip with %s missing from PATH", f.cli)
	}

	t.Setenv("CI", "true")
	msg := fatalOf(t, func(tb testing.TB) { StartCluster(tb, 3, 0) })
	if !strings.Contains(msg, f.cli) || !strings.Contains(msg, f.cliPkg) {
		t.Fatalf("StartCluster with CI set: %q; want a failure naming %s and %s", msg, f.cli, f.cliPkg)
	}
}

func TestParseClusterNodes(t *testing.T) {
	const text = `07c3 127.0.0.1:30004@31004 slave e7d1 0 1426238317239 4 connected
67ed 127.0.0.1:30002@31002,host master - 0 1426238316232 2 connected 5461-10922
e7d1 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460 [5461-<-67ed]
6ec2 127.0.0.1:30003@31003 master,fail - 1426238316232 0 3 connected 10923-16383 16000
`
	v, err := parseClusterNodes(text)
	if err != nil {
		t.Fatal(err)
	}
	alive := func(string) bool { return true }
	if got := v.masters(alive); !slices.Equal(got, []string{"127.0.0.1:30001", "127.0.0.1:30002"}) {
		t.Errorf("masters = %v; want the two that are not failing, by first slot", got)
	}
	if got := v.replicasOf("127.0.0.1:30001", alive); !slices.Equal(got, []string{"127.0.0.1:30004"}) {
		t.Errorf("replicasOf = %v", got)
	}
	if me := v.self(); me == nil || me.addr != "127.0.0.1:30001" || !me.open {
		t.Errorf("self = %+v; want 30001 with an open slot", me)
	}
	if n := v.ownerOf(5461); n == nil || n.id != "67ed" {
		t.Errorf("ownerOf(5461) = %+v; want 67ed (importing marks do not count)", n)
	}
	if n := v.ownerOf(16000); n != nil {
		t.Errorf("ownerOf(16000) = %+v; want nil: its master is failing", n)
	}
	if _, err := v.summary(alive); err == nil {
		t.Error("summary accepted an open slot and a failing master's slots")
	}
	if _, err := parseClusterNodes("x y"); err == nil {
		t.Error("parseClusterNodes accepted a short line")
	}
}
