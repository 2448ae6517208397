package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
)

// WaitHealthy waits, at most 20 s, until all three sentinels name the same
// live primary, see it up (flags "master") and know the two other sentinels;
// the primary reports role master; and every other live data node is its
// replica with the link up and is listed, up, by every sentinel. It returns
// the primary's address, or calls t.Fatal.
//
// After [Sentinel.Failover] this takes about ten seconds more on Redis 7.0:
// the sentinels leave the old primary a master until they have seen the new
// one report role master for a while, and only then make it a replica.
func (s *Sentinel) WaitHealthy(t testing.TB) string {
	t.Helper()
	var primary string
	mustPoll(t, settleTimeout, "sentinels to agree on a primary with its replica in sync", func() (err error) {
		primary, err = s.settled()
		return err
	})
	return primary
}

// settled is the check of WaitHealthy.
func (s *Sentinel) settled() (string, error) {
	primary, err := s.agreed()
	if err != nil {
		return "", err
	}
	ctx := context.Background()
	for i, sc := range s.sadmin {
		m, err := sc.Master(ctx, masterName).Result()
		if err != nil {
			return "", fmt.Errorf("sentinel %s: SENTINEL MASTER: %w", s.sentinels[i].addr, err)
		}
		if m["flags"] != "master" || m["num-other-sentinels"] != strconv.Itoa(numSentinels-1) {
			return "", fmt.Errorf("sentinel %s: primary flags %q, %s other sentinels",
				s.sentinels[i].addr, m["flags"], m["num-other-sentinels"])
		}
		reps, err := sc.Replicas(ctx, masterName).Result()
		if err != nil {
			return "", fmt.Errorf("sentinel %s: SENTINEL REPLICAS: %w", s.sentinels[i].addr, err)
		}
		for _, p := range s.data {
			if p.addr == primary || !s.alive(p.addr) {
				continue
			}
			if flags := replicaFlags(reps, p.addr); flags != "slave" {
				return "", fmt.Errorf("sentinel %s: replica %s has flags %q", s.sentinels[i].addr, p.addr, flags)
			}
		}
	}
	port := s.procAt(primary).port // a data node: agreed checked it
	for _, p := range s.data {
		if p.addr != primary && s.alive(p.addr) {
			if err := replicaOf(s.admin[p.addr], port); err != nil {
				return "", err
			}
		}
	}
	return primary, nil
}

// agreed returns the primary if every sentinel names the same one, it is a
// data node that has not been killed, and it reports role master.
func (s *Sentinel) agreed() (string, error) {
	var primary string
	for i, sc := range s.sadmin {
		a, err := sc.GetMasterAddrByName(context.Background(), masterName).Result()
		if err != nil || len(a) != 2 {
			return "", fmt.Errorf("sentinel %s: GET-MASTER-ADDR-BY-NAME: %v %v", s.sentinels[i].addr, a, err)
		}
		addr := net.JoinHostPort(a[0], a[1])
		if primary != "" && addr != primary {
			return "", fmt.Errorf("sentinels disagree: %s names %s, an earlier one %s", s.sentinels[i].addr, addr, primary)
		}
		primary = addr
	}
	rdb, ok := s.admin[primary]
	if !ok || !s.alive(primary) { // s.admin holds the data nodes
		return "", fmt.Errorf("the sentinels name %s, which is not a live data node", primary)
	}
	if r, err := role(rdb); err != nil || r != "master" {
		return "", fmt.Errorf("primary %s: ROLE %q, %v", primary, r, err)
	}
	return primary, nil
}

// Failover waits until the setup is healthy (see [Sentinel.WaitHealthy]),
// then sends SENTINEL FAILOVER mymaster to the first sentinel, which
// promotes the replica without asking the others (resent while the sentinel
// answers an error such as -NOGOODSLAVE or -INPROG). It returns the new
// primary's address once every sentinel names it and it reports role master:
// about a second and a half. It calls t.Fatal if either wait takes more than
// 20 s.
//
// When Failover returns, the old primary is still a master that accepts
// writes from clients still connected to it; the sentinels make it a replica
// of the new one about ten seconds later (WaitHealthy waits for that). A
// client made by [Sentinel.FailoverClient] drops its connections to it when
// it receives +switch-master, which the sentinels publish at the switch.
func (s *Sentinel) Failover(t testing.TB) string {
	t.Helper()
	old := s.WaitHealthy(t)
	mustPoll(t, settleTimeout, "SENTINEL FAILOVER to be accepted", func() error {
		return s.sadmin[0].Failover(context.Background(), masterName).Err()
	})
	return s.WaitPrimary(t, old)
}

// WaitPrimary waits, at most 20 s, until every sentinel names the same
// primary other than old, a data node that has not been killed and that
// reports role master, and returns its address; else it calls t.Fatal.
func (s *Sentinel) WaitPrimary(t testing.TB, old string) string {
	t.Helper()
	var primary string
	mustPoll(t, settleTimeout, "sentinels to name a primary other than "+old, func() (err error) {
		primary, err = s.agreed()
		if err == nil && primary == old {
			err = errors.New("the sentinels still name " + old)
		}
		return err
	})
	return primary
}

// KillPrimary kills the data node the sentinels name as primary with
// SIGKILL, returns its address once the process has been reaped, and does
// not wait for the sentinels to react: after down-after-milliseconds (1 s)
// two of them agree that it is down, elect a leader and promote the replica,
// a few seconds in all (see [Sentinel.WaitPrimary]). It calls t.Fatal if no
// sentinel answers or the one that does names a node that is not live.
func (s *Sentinel) KillPrimary(t testing.TB) string {
	t.Helper()
	addr := s.Primary()
	if p := s.procAt(addr); p != nil && s.alive(addr) {
		s.mu.Lock()
		s.killed[addr] = true
		s.mu.Unlock()
		p.kill()
		return addr
	}
	t.Fatalf("redistest: KillPrimary: the sentinels name %q, which is not a live data node", addr)
	return ""
}

// replicaFlags returns the flags of the replica at addr in a SENTINEL
// REPLICAS reply, or "" if it is not listed.
func replicaFlags(reps []map[string]string, addr string) string {
	for _, r := range reps {
		if net.JoinHostPort(r["ip"], r["port"]) == addr {
			return r["flags"]
		}
	}
	return ""
}

// procAt returns the data node at addr, or nil.
func (s *Sentinel) procAt(addr string) *proc {
	for _, p := range s.data {
		if p.addr == addr {
			return p
		}
	}
	return nil
}
