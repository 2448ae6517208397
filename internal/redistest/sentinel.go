package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

const (
	// masterName is the name the sentinels monitor the primary under.
	masterName = "mymaster"
	// numSentinels and sentinelQuorum: three sentinels, two of which must
	// agree that the primary is down before one of them fails it over.
	numSentinels   = 3
	sentinelQuorum = 2
	// sentinelDownAfterMs is down-after-milliseconds: a primary that does
	// not answer for this long is subjectively down.
	sentinelDownAfterMs = 1000
	// sentinelFailoverTimeoutMs is failover-timeout.
	sentinelFailoverTimeoutMs = 5000
)

// Sentinel is a primary, its replica and three sentinels monitoring them,
// started by [StartSentinel] for one test. Its methods may be called from
// any goroutine; those that take a testing.TB call t.Fatal, so they belong on
// the test's goroutine.
type Sentinel struct {
	data      []*proc                  // the primary as started, then its replica
	sentinels []*proc                  // in start order
	admin     map[string]*redis.Client // one plain client per data node
	sadmin    []*redis.SentinelClient  // one per sentinel, in start order

	mu     sync.Mutex      // protects killed
	killed map[string]bool // addresses of the data nodes KillPrimary has killed
}

// StartSentinel starts, on free 127.0.0.1 ports and with no persistence, a
// redis-server primary, a replica of it (replicaof) and three redis-server
// --sentinel processes, each with its own config file in its own t.TempDir:
// "sentinel monitor mymaster 127.0.0.1 <primary port> 2",
// down-after-milliseconds 1000 and failover-timeout 5000. It returns once
// the replica is in sync and every sentinel sees the primary, the replica
// and the two other sentinels (a few seconds: sentinels find each other
// through hello messages sent every 2 s; at most 20 s, else t.Fatal).
//
// t.Cleanup kills and reaps every process, whether the test passed or not.
// StartSentinel calls t.Skip if redis-server is not on PATH (or t.Fatal when
// CI is set); no separate redis-sentinel binary is needed.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	skipShort(t, "a Sentinel deployment")
	bin, f := serverBin(t)
	s := &Sentinel{admin: make(map[string]*redis.Client), killed: make(map[string]bool)}
	// Without a delay a replica starts its full sync at once, not after 5 s.
	repl := []string{"--repl-diskless-sync-delay", "0"}
	primary := startProc(t, bin, f.server+" (primary)", func(dir string, port int) ([]string, error) {
		return append(serverArgs(dir, port), repl...), nil
	})
	replica := startProc(t, bin, f.server+" (replica)", func(dir string, port int) ([]string, error) {
		return append(append(serverArgs(dir, port), repl...), "--replicaof", "127.0.0.1", strconv.Itoa(primary.port)), nil
	})
	s.data = []*proc{primary, replica}
	for _, p := range s.data {
		rdb := redis.NewClient(adminOptions(p.addr))
		t.Cleanup(func() { _ = rdb.Close() })
		s.admin[p.addr] = rdb
	}
	// The replica must be known to the primary before the sentinels ask it
	// (INFO), or they learn of the replica only 10 s later.
	mustPoll(t, settleTimeout, "replica to sync", func() error { return replicaOf(s.admin[replica.addr], primary.port) })

	conf := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]d %[3]d\n"+
		"sentinel down-after-milliseconds %[1]s %[4]d\n"+
		"sentinel failover-timeout %[1]s %[5]d\n",
		masterName, primary.port, sentinelQuorum, sentinelDownAfterMs, sentinelFailoverTimeoutMs)
	for range numSentinels {
		p := startProc(t, bin, f.server+" --sentinel", func(dir string, port int) ([]string, error) {
			// A sentinel rewrites its config file: each attempt gets its own.
			path := filepath.Join(dir, "sentinel.conf")
			if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
				return nil, err
			}
			return append([]string{path, "--sentinel"}, serverArgs(dir, port)...), nil
		})
		s.sentinels = append(s.sentinels, p)
		sc := redis.NewSentinelClient(adminOptions(p.addr))
		t.Cleanup(func() { _ = sc.Close() })
		s.sadmin = append(s.sadmin, sc)
	}
	s.WaitHealthy(t)
	return s
}

// MasterName returns the name the sentinels monitor the primary under,
// "mymaster".
func (s *Sentinel) MasterName() string { return masterName }

// SentinelAddrs returns the addresses of the three sentinels.
func (s *Sentinel) SentinelAddrs() []string {
	addrs := make([]string, len(s.sentinels))
	for i, p := range s.sentinels {
		addrs[i] = p.addr
	}
	return addrs
}

// Primary returns the address of the primary as the first sentinel that
// answers reports it (SENTINEL GET-MASTER-ADDR-BY-NAME), or "" if none
// answers.
func (s *Sentinel) Primary() string {
	for _, sc := range s.sadmin {
		if a, err := sc.GetMasterAddrByName(context.Background(), masterName).Result(); err == nil && len(a) == 2 {
			return net.JoinHostPort(a[0], a[1])
		}
	}
	return ""
}

// Options returns fresh failover client options: MasterName and
// SentinelAddrs are set, and DisableIdentity is true (redis-server 7.0 does
// not know CLIENT SETINFO). Every other field keeps go-redis's default. The
// mutators run last, in order, and may change anything.
func (s *Sentinel) Options(mut ...func(*redis.FailoverOptions)) *redis.FailoverOptions {
	opt := &redis.FailoverOptions{
		MasterName:      masterName,
		SentinelAddrs:   s.SentinelAddrs(),
		DisableIdentity: true,
	}
	for _, m := range mut {
		m(opt)
	}
	return opt
}

// FailoverClient returns a client made by redis.NewFailoverClient from
// s.Options(mut...): it asks the sentinels for the primary and follows their
// +switch-master announcements. It is closed by t.Cleanup; closing it
// earlier is harmless.
func (s *Sentinel) FailoverClient(t testing.TB, mut ...func(*redis.FailoverOptions)) *redis.Client {
	t.Helper()
	rdb := redis.NewFailoverClient(s.Options(mut...))
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// alive reports whether the data node at addr has not been killed.
func (s *Sentinel) alive(addr string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.killed[addr]
}

// replicaOf returns nil if the node rdb talks to is a replica of the
// primary on 127.0.0.1:port with its link up and no sync in progress.
func replicaOf(rdb *redis.Client, port int) error {
	info, err := rdb.Info(context.Background(), "replication").Result()
	if err != nil {
		return fmt.Errorf("%s: INFO replication: %w", rdb.Options().Addr, err)
	}
	if r, p := infoField(info, "role"), infoField(info, "master_port"); r != "slave" || p != strconv.Itoa(port) {
		return fmt.Errorf("%s: role:%s master_port:%s, want a replica of port %d", rdb.Options().Addr, r, p, port)
	}
	if l, s := infoField(info, "master_link_status"), infoField(info, "master_sync_in_progress"); l != "up" || s != "0" {
		return fmt.Errorf("%s: master_link_status:%s master_sync_in_progress:%s", rdb.Options().Addr, l, s)
	}
	return nil
}
