package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rfairlock"
	"github.com/redcoord/redcoord/rlock"
	"github.com/redcoord/redcoord/rrwlock"
	"github.com/redcoord/redcoord/rsemaphore"
)

// held makes, with the library, a held rlock with a waiting Client, a fair
// lock with two waiters queued, a read-write lock held by two readers
// with a writer waiting, a fair Semaphore with 2 of 5 permits taken and a
// waiter asking for 4, and an ExpirableSemaphore with one permit held. It returns the handles of the
// holders, by name.
func held(t *testing.T, rdb *redis.Client) map[string]any {
	ctx := context.Background()
	a, b := newClient(t, rdb), newClient(t, rdb)
	hs := map[string]any{}
	m := rlock.New(a, "orders:1")
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	hs["orders:1"] = m
	waiters(t, func(int) bool { return rdb.ZCard(ctx, "rc:{orders:1}:waiters").Val() == 1 },
		func(ctx context.Context) { _ = rlock.New(b, "orders:1").Lock(ctx) })

	f := rfairlock.New(a, "fair:1")
	if err := f.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	hs["fair:1"] = f
	queued := func(i int) bool { return rdb.LLen(ctx, "rc:{fair:1}:queue").Val() == int64(i) }
	waiters(t, queued,
		func(ctx context.Context) { _ = rfairlock.New(b, "fair:1").Lock(ctx) },
		func(ctx context.Context) { _ = rfairlock.New(a, "fair:1").Lock(ctx) })

	for i := range 2 {
		r := rrwlock.New(a, "rw:1")
		if err := r.RLock(ctx); err != nil {
			t.Fatal(err)
		}
		hs["rw:1/"+string(rune('a'+i))] = r
	}
	waiters(t, func(int) bool { return rdb.ZCard(ctx, "rc:{rw:1}:writers").Val() == 1 },
		func(ctx context.Context) { _ = rrwlock.New(b, "rw:1").Lock(ctx) })

	s := rsemaphore.New(a, "sem:1", rsemaphore.WithFair())
	if err := s.SetPermits(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if err := s.Acquire(ctx, 2); err != nil {
		t.Fatal(err)
	}
	waiters(t, func(int) bool { return rdb.LLen(ctx, "rc:{sem:1}:sem-queue").Val() == 1 },
		func(ctx context.Context) { _ = rsemaphore.New(b, "sem:1", rsemaphore.WithFair()).Acquire(ctx, 4) })
	x := rsemaphore.NewExpirable(a, "xsem:1")
	if err := x.SetPermits(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Acquire(ctx, rsemaphore.AcquireOptions{Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
	return hs
}

func TestLsAndInspect(t *testing.T) {
	srv := redistest.Real(t)
	rdb := srv.Client(t)
	start := time.Now()
	held(t, rdb)
	addr := []string{"-redis", srv.Addr}

	r := cli(t, "", append(addr, "ls")...).wantCode(t, exitOK)
	t.Logf("ls:\n%s", r.stdout)
	for _, want := range []string{"NAME", "orders:1  ", "rlock", "fair:1", "rfairlock", "rw:1", "2 readers",
		"sem:1", "3/5 permits free", "xsem:1", "rsemaphore-expirable"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("ls does not say %q:\n%s", want, r.stdout)
		}
	}

	all := listing(t, cli(t, "", append(addr, "ls", "-json")...).wantCode(t, exitOK))
	if len(all) != 5 {
		t.Fatalf("ls -json lists %d names, want 5: %v", len(all), all)
	}
	o := all["orders:1"]
	if o.Kind() != "rlock" || len(o.Holders) != 1 || o.Waiting != 1 || o.Token == 0 {
		t.Errorf("orders:1: %+v", o)
	}
	if h := o.Holders[0]; h.Host == "" || h.PID == 0 || h.RemainingMS <= 0 || h.Token != o.Token || h.Count != 1 {
		t.Errorf("orders:1's holder: %+v", h)
	}
	if f := all["fair:1"]; f.Waiting != 2 || len(f.Queue) != 2 || len(f.Holders) != 1 {
		t.Errorf("fair:1: %+v", f)
	}
	if rw := all["rw:1"]; len(rw.Holders) != 2 || rw.Holders[0].Role != "reader" || rw.Waiting != 1 {
		t.Errorf("rw:1: %+v", rw)
	}
	if s := all["sem:1"]; s.Permits == nil || s.Permits.Available != 3 || s.Permits.Total != 5 || s.Waiting != 1 {
		t.Errorf("sem:1: %+v", s)
	}
	if x := all["xsem:1"]; len(x.Holders) != 1 || x.Holders[0].Token == 0 || x.Permits.Available != 2 {
		t.Errorf("xsem:1: %+v", x)
	}

	some := listing(t, cli(t, "", append(addr, "ls", "-json", "fair:*")...).wantCode(t, exitOK))
	if len(some) != 1 || some["fair:1"] == nil {
		t.Errorf("ls fair:* lists %v", some)
	}
	r = cli(t, "", append(addr, "ls", "nothing:*")...).wantCode(t, exitNotFound)
	if !strings.Contains(r.stderr, `no name in use matches "nothing:*"`) {
		t.Errorf("stderr: %s", r.stderr)
	}

	// The fair queue in order: the first waiter queued first.
	st := state(t, cli(t, "", append(addr, "-json", "inspect", "fair:1")...).wantCode(t, exitOK))
	if len(st.Queue) != 2 || st.Queue[0].HeartbeatMS <= 0 || st.Queue[0].Host == "" {
		t.Fatalf("fair:1's queue: %+v", st.Queue)
	}
	first, second := st.Queue[0].Request, st.Queue[1].Request
	if queue := rdb.LRange(context.Background(), "rc:{fair:1}:queue", 0, -1).Val(); queue[0] != first ||
		queue[1] != second {
		t.Errorf("queue %v, inspect says %s, %s", queue, first, second)
	}
	// Each waiter's age: at least 0, less than the test has run, the
	// first's the oldest.
	elapsed := time.Since(start).Milliseconds()
	for _, q := range st.Queue {
		if q.AgeMS == nil || q.JoinedAt == nil || *q.AgeMS < 0 || *q.AgeMS > elapsed {
			t.Errorf("fair:1's waiter %s: age %v, joined %v, the test ran %d ms", q.Request, q.AgeMS, q.JoinedAt,
				elapsed)
		}
	}
	if q := st.Queue; q[0].AgeMS != nil && q[1].AgeMS != nil &&
		(*q[0].AgeMS < *q[1].AgeMS || q[0].JoinedAt.After(*q[1].JoinedAt)) {
		t.Errorf("fair:1's first waiter is younger than the second: %+v", q)
	}
	r = cli(t, "", append(addr, "inspect", "fair:1")...).wantCode(t, exitOK)
	t.Logf("inspect fair:1:\n%s", r.stdout)
	for _, want := range []string{"kind:", "rfairlock", "queue:", "2, oldest first", "1. request " + first,
		"2. request " + second, "holder:", "renewed by the watchdog"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("inspect fair:1 does not say %q:\n%s", want, r.stdout)
		}
	}
	if n := strings.Count(r.stdout, ", lease 30s, waiting "); n != 2 {
		t.Errorf("inspect fair:1 gives %d waiters' ages, want 2:\n%s", n, r.stdout)
	}
	st = state(t, cli(t, "", append(addr, "-json", "inspect", "sem:1")...).wantCode(t, exitOK))
	if q := st.Queue; len(q) != 1 || q[0].Permits != 4 || q[0].AgeMS == nil || *q[0].AgeMS < 0 ||
		*q[0].AgeMS > time.Since(start).Milliseconds() {
		t.Errorf("sem:1's queue: %+v", q)
	}
	r = cli(t, "", append(addr, "inspect", "sem:1")...).wantCode(t, exitOK)
	t.Logf("inspect sem:1:\n%s", r.stdout)
	if !strings.Contains(r.stdout, "asks 4 permits, waiting ") {
		t.Errorf("inspect sem:1 gives no age:\n%s", r.stdout)
	}
	r = cli(t, "", append(addr, "inspect", "orders:1")...).wantCode(t, exitOK)
	t.Logf("inspect orders:1:\n%s", r.stdout)
	for _, want := range []string{"registered Clients:", "waiters", "heartbeat due within"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("inspect orders:1 does not say %q:\n%s", want, r.stdout)
		}
	}
	r = cli(t, "", append(addr, "inspect", "rw:1")...).wantCode(t, exitOK)
	t.Logf("inspect rw:1:\n%s", r.stdout)
	if !strings.Contains(r.stdout, "waiting writers:") || strings.Count(r.stdout, "reader:") != 2 {
		t.Errorf("inspect rw:1:\n%s", r.stdout)
	}
	r = cli(t, "", append(addr, "inspect", "no-such-name")...).wantCode(t, exitNotFound)
	if !strings.Contains(r.stderr, `no name "no-such-name"`) {
		t.Errorf("stderr: %s", r.stderr)
	}
}

func TestForceUnlock(t *testing.T) {
	srv := redistest.Real(t)
	rdb := srv.Client(t)
	c := newClient(t, rdb)
	ctx := context.Background()
	addr := []string{"-redis", srv.Addr}
	m := rlock.New(c, "orders:2")
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}

	r := cli(t, "n\n", append(addr, "force-unlock", "orders:2")...).wantCode(t, exitNotFound)
	if !strings.Contains(r.stderr, "Force-unlock it?") || !strings.Contains(r.stderr, "not confirmed") {
		t.Errorf("stderr: %s", r.stderr)
	}
	if ok, _ := m.IsLocked(ctx); !ok {
		t.Fatal("an unconfirmed force-unlock unlocked")
	}
	cli(t, "y\n", append(addr, "force-unlock", "orders:2")...).wantCode(t, exitOK)
	select {
	case <-m.Lost():
	case <-time.After(redistest.Patience(5 * time.Second)):
		t.Fatal("the holder was not told of the forced unlock")
	}
	if err := m.Unlock(ctx); !errors.Is(err, redcoord.ErrLeaseLost) {
		t.Errorf("Unlock after the force: %v", err)
	}
	cli(t, "", append(addr, "force-unlock", "-y", "orders:2")...).wantCode(t, exitNotFound)

	// A fair lock is handed to its waiter.
	f := rfairlock.New(c, "fair:2")
	if err := f.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	waiters(t, func(int) bool { return rdb.LLen(ctx, "rc:{fair:2}:queue").Val() == 1 },
		func(ctx context.Context) { got <- rfairlock.New(c, "fair:2").Lock(ctx) })
	r = cli(t, "", append(addr, "-json", "-y", "force-unlock", "fair:2")...).wantCode(t, exitOK)
	if !strings.Contains(r.stdout, `"forced": true`) {
		t.Errorf("stdout: %s", r.stdout)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(redistest.Patience(5 * time.Second)):
		t.Fatal("the waiter did not get the forced lock")
	}

	s := rsemaphore.New(c, "sem:2")
	if err := s.SetPermits(ctx, 1); err != nil {
		t.Fatal(err)
	}
	r = cli(t, "", append(addr, "-y", "force-unlock", "sem:2")...).wantCode(t, exitError)
	if !strings.Contains(r.stderr, "only a lock") {
		t.Errorf("stderr: %s", r.stderr)
	}
}
