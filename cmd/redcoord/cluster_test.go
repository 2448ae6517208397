package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rfairlock"
	"github.com/redcoord/redcoord/rlock"
	"github.com/redcoord/redcoord/rsemaphore"
)

// On a Cluster, ls reads every primary, and inspect, force-unlock and
// watch find the name's primary.
func TestCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 0)
	rdb := cl.Client(t)
	c := newClient(t, rdb)
	ctx := context.Background()
	masters := map[string]bool{}
	for i := range 30 {
		name := fmt.Sprintf("orders:%d", i)
		if err := rlock.New(c, name).LockWithLease(ctx, time.Minute); err != nil {
			t.Fatal(err)
		}
		masters[cl.MasterFor("rc:{"+name+"}:lock")] = true
	}
	if len(masters) != 3 {
		t.Fatalf("30 names on %d primaries, want 3", len(masters))
	}
	f := rfairlock.New(c, "fair:c")
	if err := f.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	waiters(t, func(int) bool { return rdb.LLen(ctx, "rc:{fair:c}:queue").Val() == 1 },
		func(ctx context.Context) { _ = rfairlock.New(c, "fair:c").Lock(ctx) })
	s := rsemaphore.New(c, "sem:c")
	if err := s.SetPermits(ctx, 4); err != nil {
		t.Fatal(err)
	}
	if err := s.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	addr := []string{"-cluster", "-redis", strings.Join(cl.Masters(), ",")}

	all := listing(t, cli(t, "", append(addr, "-json", "-count", "7", "ls")...).wantCode(t, exitOK))
	if len(all) != 32 {
		for n := range all {
			t.Log(n, cl.MasterFor("rc:{"+n+"}:lock"))
		}
		t.Fatalf("ls lists %d names, want 32", len(all))
	}
	if st := all["fair:c"]; st.Waiting != 1 || len(st.Holders) != 1 {
		t.Errorf("fair:c: %+v", st)
	}
	if st := all["sem:c"]; st.Permits == nil || st.Permits.Available != 3 {
		t.Errorf("sem:c: %+v", st)
	}
	st := state(t, cli(t, "", append(addr, "-json", "inspect", "orders:7")...).wantCode(t, exitOK))
	if len(st.Holders) != 1 || !st.Holders[0].Fixed || st.Holders[0].LeaseMS != 60000 {
		t.Errorf("orders:7: %+v", st.Holders)
	}

	// watch hears the fair lock's hand-off on its sharded channel.
	out := watching(t, append(addr, "-json", "-interval", "1h", "watch", "fair:c")...)
	eventually(t, func() bool { _, n := lastHolder(t, out); return n == 1 })
	first, _ := lastHolder(t, out)
	cli(t, "", append(addr, "-y", "force-unlock", "fair:c")...).wantCode(t, exitOK)
	eventually(t, func() bool { o, n := lastHolder(t, out); return n >= 2 && o != "" && o != first })
	select {
	case <-f.Lost():
	case <-time.After(redistest.Patience(5 * time.Second)):
		t.Fatal("the forced holder was not told")
	}
}

// With -sentinel, -redis names the sentinels, which name the primary.
func TestSentinel(t *testing.T) {
	s := redistest.StartSentinel(t)
	c := newClient(t, s.FailoverClient(t))
	if err := rlock.New(c, "orders:s").Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
	addr := []string{"-sentinel", s.MasterName(), "-redis", strings.Join(s.SentinelAddrs(), ",")}
	all := listing(t, cli(t, "", append(addr, "-json", "ls")...).wantCode(t, exitOK))
	if st := all["orders:s"]; st == nil || len(st.Holders) != 1 {
		t.Errorf("ls: %+v", all)
	}
	r := cli(t, "", "-sentinel", "no-such-master", "-redis", s.SentinelAddrs()[0], "-timeout", "2s", "ls")
	r.wantCode(t, exitError)
	if !strings.Contains(r.stderr, `master "no-such-master"`) {
		t.Errorf("stderr: %s", r.stderr)
	}
}
