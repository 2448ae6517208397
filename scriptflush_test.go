package redcoord_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
	"github.com/redcoord/redcoord/rrwlock"
)

// noEval fails t if the server at rdb ran EVAL or EVAL_RO since it
// started (INFO commandstats lists a command once it has run), and
// reports whether it ran SCRIPT LOAD.
func noEval(t *testing.T, rdb *redis.Client) (loaded bool) {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		assert.False(t, strings.HasPrefix(line, "cmdstat_eval:") || strings.HasPrefix(line, "cmdstat_eval_ro:"),
			"%s: %s", rdb.Options().Addr, line)
		loaded = loaded || strings.HasPrefix(line, "cmdstat_script|load:")
	}
	return loaded
}

// counted returns a client of srv whose commands rt counts, and another
// client (the operator's) that nothing counts.
func counted(t *testing.T, srv *redistest.Server) (rdb, admin *redis.Client, rt *redistest.RoundTrips) {
	rdb, admin, rt = srv.Client(t), srv.Client(t), &redistest.RoundTrips{}
	rdb.AddHook(rt)
	return rdb, admin, rt
}

// After SCRIPT FLUSH (as after a restart or a failover) every kind of
// acquire and release works again: its script is loaded with SCRIPT LOAD
// and called by its SHA1 once more, one load and two EVALSHA for an
// uncontended acquire; no script body is ever sent with EVAL.
func TestScriptFlushBetweenAcquires(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx := context.Background()
		rdb, admin, rt := counted(t, srv)
		c := locktest.NewClient(t, rdb)
		for _, s := range subjects(t, c, "flush-") {
			require.NoError(t, s.acquire(ctx), s.kind)
			require.NoError(t, s.release(ctx), s.kind)
			require.NoError(t, admin.ScriptFlush(ctx).Err())
			rt.Reset()
			require.NoError(t, s.acquire(ctx), "%s after SCRIPT FLUSH", s.kind)
			assert.Equal(t, int64(1), rt.Commands("script"), "%s: one SCRIPT LOAD", s.kind)
			assert.Equal(t, int64(2), rt.Commands("evalsha"), s.kind)
			n, err := s.held(ctx)
			require.NoError(t, err)
			assert.NotZero(t, n, "%s holds", s.kind)
			require.NoError(t, admin.ScriptFlush(ctx).Err())
			require.NoError(t, s.release(ctx), "%s after SCRIPT FLUSH", s.kind)
			n, err = s.held(ctx)
			require.NoError(t, err)
			assert.Zero(t, n, "%s released", s.kind)
		}
		assert.Zero(t, rt.Commands("eval"))
		if srv.Real {
			assert.True(t, noEval(t, admin))
		}
	})
}

// The watchdog renews holds across SCRIPT FLUSH: its pipeline loads the
// renewal scripts it finds missing and renews again, without EVAL.
func TestWatchdogRenewsAfterScriptFlush(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx := context.Background()
		rdb, admin, rt := counted(t, srv)
		const ttl = 300 * time.Millisecond
		c := locktest.NewClient(t, rdb, redcoord.WithLeaseTTL(ttl))
		m, rw := rlock.New(c, "renewed"), rrwlock.New(c, "renewed-rw")
		require.NoError(t, m.Lock(ctx))
		require.NoError(t, rw.RLock(ctx))
		require.NoError(t, admin.ScriptFlush(ctx).Err())
		rt.Reset()
		time.Sleep(3 * ttl)
		assert.False(t, locktest.IsClosed(m.Lost()), "the lock is kept")
		assert.False(t, locktest.IsClosed(rw.RLost()), "the read lock is kept")
		assert.Equal(t, int64(2), rt.Commands("script"), "the two renewal scripts loaded once each")
		assert.Zero(t, rt.Commands("eval"))
		require.NoError(t, m.Unlock(ctx))
		require.NoError(t, rw.RUnlock(ctx))
		if srv.Real {
			assert.True(t, noEval(t, admin))
		}
	})
}

// On Cluster, a SCRIPT FLUSH on every node leaves every primary without
// the scripts: an acquire of a name on each primary loads its script
// where it runs and takes the name, the watchdog's renewals go on, a
// Client WithWaitReplicas (the script in a pipeline with WAIT) does the
// same, and no node ever runs EVAL.
func TestClusterScriptFlush(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 1)
	ctx := context.Background()
	rdb := cl.Client(t)
	const ttl = 600 * time.Millisecond
	plain := locktest.NewClient(t, rdb, redcoord.WithLeaseTTL(ttl))
	acked := locktest.NewClient(t, rdb, redcoord.WithLeaseTTL(ttl), redcoord.WithWaitReplicas(1, 150*time.Millisecond))
	// names returns one name per primary, from prefix.
	names := func(prefix string) []string {
		byMaster := make(map[string]string)
		for i := 0; len(byMaster) < len(cl.Masters()) && i < 1000; i++ {
			name := fmt.Sprintf("%s%d", prefix, i)
			if m := cl.MasterFor("rc:{" + name + "}:lock"); byMaster[m] == "" {
				byMaster[m] = name
			}
		}
		require.Len(t, byMaster, len(cl.Masters()))
		var out []string
		for _, n := range byMaster {
			out = append(out, n)
		}
		return out
	}
	var held []*rlock.Mutex
	for _, c := range []*redcoord.Client{plain, acked} {
		for _, name := range names(fmt.Sprintf("held%d-", len(held))) {
			m := rlock.New(c, name)
			require.NoError(t, m.Lock(ctx))
			held = append(held, m)
		}
	}
	require.NoError(t, rdb.ScriptFlush(ctx).Err()) // every node
	for i, c := range []*redcoord.Client{plain, acked} {
		for _, name := range names(fmt.Sprintf("after%d-", i)) {
			m := rlock.New(c, name)
			require.NoError(t, m.Lock(ctx), "%s after SCRIPT FLUSH", name)
			require.NoError(t, m.Unlock(ctx))
		}
	}
	time.Sleep(2 * ttl) // renewals after the flush
	for _, m := range held {
		assert.False(t, locktest.IsClosed(m.Lost()), "%s is kept", m.Name())
		require.NoError(t, m.Unlock(ctx))
	}
	require.NoError(t, rdb.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		assert.True(t, noEval(t, node), "%s loaded scripts", node.Options().Addr)
		return nil
	}))
}
