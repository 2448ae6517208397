package redistest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Replicated is a redis-server primary and one replica of it, started by
// [StartReplicated] for one test: what WAIT needs to count an
// acknowledgement, without the sentinels of [StartSentinel].
type Replicated struct {
	Primary *Server // where clients write
	Replica *Server // a replica of Primary (replicaof)

	replica *proc
	admin   *redis.Client // to Primary
}

// StartReplicated starts, on free 127.0.0.1 ports and with no persistence,
// a redis-server primary and a replica of it, and returns once the replica
// is in sync and the primary counts it online (at most 20 s, else t.Fatal).
// Both sync without delay (repl-diskless-sync-delay 0). t.Cleanup kills and
// reaps both, paused or not. StartReplicated calls t.Skip if redis-server is
// not on PATH (or t.Fatal when CI is set), as [Real] does.
func StartReplicated(t testing.TB) *Replicated {
	t.Helper()
	skipShort(t, "a primary and its replica")
	bin, f := serverBin(t)
	repl := []string{"--repl-diskless-sync-delay", "0"}
	primary := startProc(t, bin, f.server+" (primary)", func(dir string, port int) ([]string, error) {
		return append(serverArgs(dir, port), repl...), nil
	})
	replica := startProc(t, bin, f.server+" (replica)", func(dir string, port int) ([]string, error) {
		return append(append(serverArgs(dir, port), repl...), "--replicaof", "127.0.0.1", strconv.Itoa(primary.port)), nil
	})
	padmin, radmin := redis.NewClient(adminOptions(primary.addr)), redis.NewClient(adminOptions(replica.addr))
	t.Cleanup(func() { _ = padmin.Close(); _ = radmin.Close() })
	r := &Replicated{
		Primary: &Server{Addr: primary.addr, Real: true},
		Replica: &Server{Addr: replica.addr, Real: true},
		replica: replica,
		admin:   padmin,
	}
	mustPoll(t, settleTimeout, "replica to sync", func() error {
		if err := replicaOf(radmin, primary.port); err != nil {
			return err
		}
		info, err := padmin.Info(context.Background(), "replication").Result()
		if err != nil {
			return err
		}
		if s := infoField(info, "slave0"); infoField(info, "connected_slaves") != "1" || !containsState(s, "online") {
			return fmt.Errorf("%s: the primary lists its replica as %q", primary.addr, s)
		}
		return nil
	})
	r.WaitAcked(t)
	return r
}

// WaitAcked returns once the replica acknowledges a write of the
// primary's (at most 20 s, else t.Fatal): the primary may count a replica
// online before it answers WAIT, and a resumed replica has a backlog to
// apply first. The write is a key set and deleted at once.
func (r *Replicated) WaitAcked(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	mustPoll(t, settleTimeout, "replica to acknowledge a write", func() error {
		wait := redis.NewIntCmd(ctx, "wait", 1, (500 * time.Millisecond).Milliseconds())
		_, err := r.admin.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "redistest:acked", "1", 0)
			p.Del(ctx, "redistest:acked")
			return p.Process(ctx, wait)
		})
		if err != nil {
			return err
		}
		if wait.Val() < 1 {
			return fmt.Errorf("%s: WAIT 1 counted %d replicas", r.Primary.Addr, wait.Val())
		}
		return nil
	})
}

// PauseReplica stops the replica's process (SIGSTOP): its connection to the
// primary stays open, but it applies and acknowledges nothing, as a replica
// stalled by a long pause or cut off by a partition would, until
// ResumeReplica.
func (r *Replicated) PauseReplica(t testing.TB) { r.signal(t, syscall.SIGSTOP) }

// ResumeReplica lets a paused replica run again (SIGCONT) and returns once
// it has caught up with the primary's stream ([Replicated.WaitAcked]).
func (r *Replicated) ResumeReplica(t testing.TB) {
	t.Helper()
	r.signal(t, syscall.SIGCONT)
	r.WaitAcked(t)
}

func (r *Replicated) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := r.replica.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("redistest: signal %v to the replica: %v", sig, err)
	}
}

// containsState reports whether an INFO replication "slaveN" line
// ("ip=...,port=...,state=online,...") has the given state.
func containsState(line, state string) bool {
	return slices.Contains(strings.Split(line, ","), "state="+state)
}
