package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/relection"
	"github.com/redcoord/redcoord/rlatch"
	"github.com/redcoord/redcoord/rratelimit"
)

// An election's leader, candidates and terms, a latch's count and a rate
// limiter's stored limit, as inspect and ls show them.
func TestInspectOtherKinds(t *testing.T) {
	srv := redistest.Real(t)
	rdb := srv.Client(t)
	c := newClient(t, rdb)
	ctx := context.Background()
	addr := []string{"-redis", srv.Addr}
	start := time.Now()

	if err := relection.New(c, "leader:1").Campaign(ctx, "node-a"); err != nil {
		t.Fatal(err)
	}
	waiters(t, func(int) bool { return rdb.LLen(ctx, "rc:{leader:1}:elect-queue").Val() == 1 },
		func(ctx context.Context) { _ = relection.New(c, "leader:1").Campaign(ctx, "node-b") })
	st := state(t, cli(t, "", append(addr, "-json", "inspect", "leader:1")...).wantCode(t, exitOK))
	if st.Kind() != "relection" || len(st.Holders) != 1 || st.Holders[0].Role != "leader" ||
		st.Holders[0].Value != "node-a" || len(st.Queue) != 1 || st.Waiting != 1 {
		t.Errorf("leader:1: %+v", st)
	}
	if q := st.Queue; len(q) == 1 && (q[0].AgeMS == nil || *q[0].AgeMS < 0 ||
		*q[0].AgeMS > time.Since(start).Milliseconds()) {
		t.Errorf("leader:1's candidate's age: %v (the test ran %v)", q[0].AgeMS, time.Since(start))
	}
	if len(st.Terms) == 0 || st.Terms[0].Value != "node-a" || st.Terms[0].Term != st.Holders[0].Token {
		t.Errorf("leader:1's terms: %+v", st.Terms)
	}
	r := cli(t, "", append(addr, "force-unlock", "-y", "leader:1")...).wantCode(t, exitError)
	if !strings.Contains(r.stderr, "is a relection") {
		t.Errorf("stderr: %s", r.stderr)
	}

	if _, err := rlatch.New(c, "latch:1").TrySetCount(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if err := rlatch.New(c, "latch:1").CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	st = state(t, cli(t, "", append(addr, "-json", "inspect", "latch:1")...).wantCode(t, exitOK))
	if st.Latch == nil || st.Latch.Count != 2 {
		t.Errorf("latch:1: %+v", st)
	}

	l := rratelimit.New(c, "api:1", rratelimit.PerSecond(10))
	if err := l.SetLimit(ctx, rratelimit.PerMinute(600)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Allow(ctx); err != nil {
		t.Fatal(err)
	}
	r = cli(t, "", append(addr, "inspect", "api:1")...).wantCode(t, exitOK)
	if !strings.Contains(r.stdout, "rate:") || !strings.Contains(r.stdout, "600 per 1m0s") ||
		!strings.Contains(r.stdout, "stored by SetLimit") {
		t.Errorf("inspect api:1:\n%s", r.stdout)
	}
	all := listing(t, cli(t, "", append(addr, "-json", "ls")...).wantCode(t, exitOK))
	for _, n := range []string{"leader:1", "latch:1", "api:1"} {
		if all[n] == nil {
			t.Errorf("ls does not list %s", n)
		}
	}
}
