package redistest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	start := time.Now()
	s := StartSentinel(t)
	t.Logf("StartSentinel: %v", time.Since(start).Round(time.Millisecond))
	ctx := context.Background()

	if s.MasterName() != "mymaster" || len(s.SentinelAddrs()) != 3 {
		t.Fatalf("MasterName() = %q, SentinelAddrs() = %v", s.MasterName(), s.SentinelAddrs())
	}
	for _, a := range s.SentinelAddrs() {
		if !strings.HasPrefix(a, "127.0.0.1:") {
			t.Fatalf("sentinel address %q is not on loopback", a)
		}
		if r, err := role(direct(t, a)); r != "sentinel" {
			t.Fatalf("%s: ROLE = %q, %v; want sentinel", a, r, err)
		}
	}
	old := s.Primary()
	if r, err := role(direct(t, old)); r != "master" {
		t.Fatalf("Primary() = %q, whose ROLE is %q, %v", old, r, err)
	}

	rdb := s.FailoverClient(t)
	if err := rdb.Set(ctx, "k", "before", 0).Err(); err != nil {
		t.Fatalf("SET before the failover: %v", err)
	}
	if got := direct(t, old).Get(ctx, "k").Val(); got != "before" {
		t.Fatalf("the primary holds k = %q, want before", got)
	}

	start = time.Now()
	primary := s.Failover(t)
	t.Logf("Failover: %v", time.Since(start).Round(time.Millisecond))
	if primary == old || s.Primary() != primary {
		t.Fatalf("Failover returned %s, Primary() = %s; old primary %s", primary, s.Primary(), old)
	}
	if r, err := role(direct(t, primary)); r != "master" {
		t.Fatalf("new primary's ROLE = %q, %v", r, err)
	}
	if got := direct(t, primary).Get(ctx, "k").Val(); got != "before" {
		t.Errorf("the new primary holds k = %q, want before", got)
	}

	// The client drops its connections to the old primary when it hears
	// +switch-master, which may reach it a moment after Failover returns;
	// meanwhile a write may still land on the old primary, a master for
	// several seconds more.
	var tries int
	err := poll(5*time.Second, "a write through the failover client to reach "+primary, func() error {
		tries++
		v := fmt.Sprintf("after-%d", tries)
		if err := rdb.Set(ctx, "k", v, 0).Err(); err != nil {
			return err
		}
		if got := direct(t, primary).Get(ctx, "k").Val(); got != v {
			return fmt.Errorf("the new primary holds k = %q, want %q", got, v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the failover client reached the new primary on write %d", tries)

	start = time.Now()
	if got := s.WaitHealthy(t); got != primary {
		t.Fatalf("WaitHealthy() = %s, want %s", got, primary)
	}
	t.Logf("WaitHealthy after the failover: %v", time.Since(start).Round(time.Millisecond))
	if r, err := role(direct(t, old)); r != "slave" {
		t.Errorf("old primary's ROLE = %q, %v after WaitHealthy; want slave", r, err)
	}
}

func TestSentinelKillPrimary(t *testing.T) {
	t.Parallel()
	s := StartSentinel(t)
	ctx := context.Background()
	rdb := s.FailoverClient(t)
	if err := rdb.Set(ctx, "k", "before", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.Wait(ctx, 1, time.Second).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 = %d, %v; want the replica to acknowledge", n, err)
	}

	start := time.Now()
	old := s.KillPrimary(t)
	primary := s.WaitPrimary(t, old)
	t.Logf("KillPrimary until a new primary: %v", time.Since(start).Round(time.Millisecond))
	if primary == old {
		t.Fatalf("WaitPrimary returned the killed primary %s", old)
	}
	if got, err := rdb.Get(ctx, "k").Result(); err != nil || got != "before" {
		t.Fatalf("GET through the failover client = %q, %v; want before", got, err)
	}
	if err := rdb.Set(ctx, "k", "after", 0).Err(); err != nil {
		t.Fatalf("SET after the failover: %v", err)
	}
	if got := direct(t, primary).Get(ctx, "k").Val(); got != "after" {
		t.Errorf("the new primary holds k = %q, want after", got)
	}
	if got := s.WaitHealthy(t); got != primary {
		t.Errorf("WaitHealthy() = %s, want %s", got, primary)
	}
}
