package lease_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// renew extends KEYS[1] if it exists: 1, else 0.
var renew = redis.NewScript(`if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1]) return 1 end
return 0`)

const ttl = 30 * time.Second

func bubble(t *testing.T, f func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, rt *redistest.RoundTrips, w *lease.Watchdog)) {
	bubbleWith(t, lease.Replicas{}, f)
}

// bubbleWith is bubble with a watchdog whose renewals replicas acknowledge.
func bubbleWith(t *testing.T, replicas lease.Replicas, f func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, rt *redistest.RoundTrips, w *lease.Watchdog)) {
	synctest.Test(t, func(t *testing.T) {
		m, opts := redistest.Bubble()
		defer m.Close()
		rdb := redis.NewClient(opts)
		defer rdb.Close()
		rt := &redistest.RoundTrips{}
		rdb.AddHook(rt)
		w := lease.New(rdb, ttl, slog.New(slog.DiscardHandler), replicas, nil)
		defer func() { require.NoError(t, w.Close(context.Background())) }()
		f(t, m, rdb, rt, w)
	})
}

func add(t *testing.T, rdb *redis.Client, w *lease.Watchdog, key string, lost *atomic.Int32) *lease.Lease {
	t.Helper()
	require.NoError(t, rdb.Set(context.Background(), key, "x", ttl).Err())
	l, err := w.Add(lease.Renewal{Script: renew, Keys: []string{key}, Args: []any{ttl.Milliseconds()}},
		time.Now(), func(closed bool) {
			if !closed {
				lost.Add(1)
			}
		})
	require.NoError(t, err)
	return l
}

// 100 leases cost one round trip per tick, and all stay alive.
func TestOnePipelinePerTick(t *testing.T) {
	bubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, rt *redistest.RoundTrips, w *lease.Watchdog) {
		var lost atomic.Int32
		for i := 0; i < 100; i++ {
			add(t, rdb, w, fmt.Sprintf("k%d", i), &lost)
		}
		rt.Reset()
		time.Sleep(10*w.Interval() + time.Millisecond)
		synctest.Wait()
		// The first tick also loads the script (NOSCRIPT, SCRIPT LOAD, the
		// renewals again): two more.
		assert.Equal(t, int64(12), rt.Load(), "round trips for 10 ticks")
		assert.Equal(t, int64(11*100), rt.Commands("evalsha"))
		assert.Equal(t, int64(1), rt.Commands("script"), "one SCRIPT LOAD")
		assert.Zero(t, rt.Commands("eval"))
		assert.Zero(t, lost.Load())
		assert.Equal(t, 100, w.Len())
		assert.Equal(t, int64(100), rdb.Exists(context.Background(), keys(100)...).Val())
	})
}

func keys(n int) []string {
	k := make([]string, n)
	for i := range k {
		k[i] = fmt.Sprintf("k%d", i)
	}
	return k
}

// After SCRIPT FLUSH (a restart, a failover) the next tick reloads the script.
func TestReloadsFlushedScript(t *testing.T) {
	bubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, rt *redistest.RoundTrips, w *lease.Watchdog) {
		var lost atomic.Int32
		add(t, rdb, w, "k", &lost)
		time.Sleep(w.Interval() + time.Millisecond)
		require.NoError(t, rdb.ScriptFlush(context.Background()).Err())
		time.Sleep(3 * w.Interval()) // past the TTL measured from the start
		synctest.Wait()
		assert.Zero(t, lost.Load())
		assert.Greater(t, rdb.PTTL(context.Background(), "k").Val(), 2*w.Interval())
	})
}

// A gone key is lost at the next tick; a removed lease is never renewed and
// never reported lost.
func TestLossAndRemove(t *testing.T) {
	bubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, rt *redistest.RoundTrips, w *lease.Watchdog) {
		var lostA, lostB atomic.Int32
		require.NoError(t, renew.Load(context.Background(), rdb).Err()) // no NOSCRIPT round
		add(t, rdb, w, "a", &lostA)
		b := add(t, rdb, w, "b", &lostB)
		m.Del("a")
		b.Remove()
		b.Remove()
		m.Del("b")
		rt.Reset()
		time.Sleep(w.Interval() + time.Millisecond)
		synctest.Wait()
		assert.Equal(t, int32(1), lostA.Load())
		assert.Zero(t, lostB.Load(), "a removed lease is not reported")
		assert.Zero(t, w.Len())
		assert.Equal(t, int64(1), rt.Commands("evalsha"), "only a was renewed")
		rt.Reset()
		time.Sleep(10 * w.Interval())
		assert.Zero(t, rt.Load(), "nothing left to renew")
	})
}

// With Replicas, a renewal counts only once enough replicas acknowledge it:
// miniredis has none, so every renewal succeeds in Redis and none counts,
// and each lease is lost a TTL less lease.Margin after it was set, before a
// promoted replica would expire it; meanwhile, one pipeline per tick, ending in
// WAIT. Here WAIT takes its whole timeout, 5s, as a real server's does when
// too few replicas acknowledge: the loss is reported on time all the same,
// while the tick due then waits on its replies. A waiter's heartbeat, which
// holds nothing, counts.
func TestUnacknowledgedRenewalsDoNotCount(t *testing.T) {
	const timeout = 5 * time.Second
	bubbleWith(t, lease.Replicas{N: 1, Timeout: timeout}, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, rt *redistest.RoundTrips, w *lease.Watchdog) {
		rdb.AddHook(slowWait{timeout})
		var lost atomic.Int32
		require.NoError(t, renew.Load(context.Background(), rdb).Err()) // no NOSCRIPT round
		start := time.Now()
		for i := range 10 {
			add(t, rdb, w, fmt.Sprintf("k%d", i), &lost)
		}
		var waiterLost atomic.Int32
		require.NoError(t, rdb.Set(context.Background(), "waiter", "x", ttl).Err())
		_, err := w.Add(lease.Renewal{Script: renew, Keys: []string{"waiter"}, Args: []any{ttl.Milliseconds()}, Waiter: true},
			time.Now(), func(bool) { waiterLost.Add(1) })
		require.NoError(t, err)
		rt.Reset()
		time.Sleep(ttl - lease.Margin(ttl) - time.Millisecond)
		synctest.Wait()
		assert.Zero(t, lost.Load(), "not before the TTL less the margin")
		assert.Equal(t, int64(2), rt.Load(), "two ticks, a round trip each")
		assert.Equal(t, int64(2), rt.Commands("wait"))
		assert.Equal(t, int64(22), rt.Commands("evalsha"))
		time.Sleep(time.Millisecond)
		synctest.Wait()
		assert.Equal(t, int32(10), lost.Load(), "lost at the TTL less the margin, %v after they were set", time.Since(start))
		assert.Equal(t, 1, w.Len(), "the waiter's heartbeat is left")
		assert.Equal(t, int64(10), rdb.Exists(context.Background(), keys(10)...).Val(), "still held in Redis")
		time.Sleep(3 * ttl)
		synctest.Wait()
		assert.Zero(t, waiterLost.Load(), "a waiter's heartbeat counts unacknowledged")
	})
}

func TestCloseStopsAndRefuses(t *testing.T) {
	bubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, rt *redistest.RoundTrips, w *lease.Watchdog) {
		var lost, closed atomic.Int32
		add(t, rdb, w, "k", &lost)
		require.NoError(t, rdb.Set(context.Background(), "k2", "x", ttl).Err())
		_, err := w.Add(lease.Renewal{Script: renew, Keys: []string{"k2"}, Args: []any{ttl.Milliseconds()}},
			time.Now(), func(c bool) {
				if c {
					closed.Add(1)
				}
			})
		require.NoError(t, err)
		require.NoError(t, w.Close(context.Background()))
		assert.Equal(t, int32(1), closed.Load(), "Close ends the leases it watched, before it returns")
		assert.Zero(t, w.Len())
		require.NoError(t, w.Close(context.Background()))
		_, err = w.Add(lease.Renewal{Script: renew, Keys: []string{"k"}}, time.Now(), func(bool) {})
		assert.ErrorIs(t, err, errs.ErrClosed)
		rt.Reset()
		time.Sleep(10 * w.Interval())
		assert.Zero(t, rt.Load(), "a closed watchdog sends nothing")
		assert.Zero(t, lost.Load(), "Close reports nothing lost")
		assert.Equal(t, int32(1), closed.Load(), "and ends each lease once")
	})
}

func TestCloseBeforeStart(t *testing.T) {
	w := lease.New(nil, ttl, slog.New(slog.DiscardHandler), lease.Replicas{}, nil)
	require.NoError(t, w.Close(context.Background()))
}

// slowWait is a go-redis hook that makes a pipeline with WAIT in it take d
// longer, as WAIT does on a server whose replicas do not acknowledge (miniredis
// answers at once).
type slowWait struct{ d time.Duration }

func (slowWait) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (slowWait) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h slowWait) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if cmd.Name() == "wait" {
				time.Sleep(h.d)
				break
			}
		}
		return err
	}
}

// failRenewals is a go-redis hook that fails every pipeline (the watchdog's
// renewals) while on is set, without sending it.
type failRenewals struct{ on *atomic.Bool }

func (failRenewals) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (failRenewals) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h failRenewals) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.on.Load() {
			err := errors.New("injected: renewal failed")
			for _, cmd := range cmds {
				cmd.SetErr(err)
			}
			return err
		}
		return next(ctx, cmds)
	}
}

// Two leases whose deadlines fall between the same two ticks, their
// renewals failing, are each reported lost at its own deadline: the timer is
// armed again for the second after reporting the first.
func TestLeasesLostBetweenTicks(t *testing.T) {
	bubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, rt *redistest.RoundTrips, w *lease.Watchdog) {
		var on atomic.Bool
		rdb.AddHook(failRenewals{&on})
		on.Store(true)
		r := lease.Renewal{Script: renew, Keys: []string{"k"}, Args: []any{ttl.Milliseconds()}}
		// Deadlines 3 s and 5 s after the second tick (20 s), before the third.
		life := ttl - lease.Margin(ttl)
		var lostA, lostB atomic.Int32
		start := time.Now()
		_, err := w.Add(r, start.Add(23*time.Second-life), func(bool) { lostA.Add(1) })
		require.NoError(t, err)
		_, err = w.Add(r, start.Add(25*time.Second-life), func(bool) { lostB.Add(1) })
		require.NoError(t, err)

		time.Sleep(23*time.Second - time.Millisecond)
		synctest.Wait()
		assert.Zero(t, lostA.Load()+lostB.Load(), "neither before its deadline")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		assert.Equal(t, int32(1), lostA.Load(), "the first at its deadline")
		assert.Zero(t, lostB.Load())
		time.Sleep(2*time.Second - time.Millisecond)
		synctest.Wait()
		assert.Zero(t, lostB.Load(), "the second not before its deadline")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		assert.Equal(t, int32(1), lostB.Load(), "the second at its deadline, %v in, not at the next tick", time.Since(start))
		assert.Zero(t, w.Len())
	})
}

// stuckOnce is a go-redis hook whose first pipeline never returns until
// release is closed, whatever its context says: a tick on a connection that
// swallows writes, with go-redis's ReadTimeout -1.
type stuckOnce struct {
	first   *atomic.Bool
	release chan struct{}
}

func (stuckOnce) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (stuckOnce) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h stuckOnce) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.first.CompareAndSwap(false, true) {
			<-h.release
			err := errors.New("injected: stuck connection closed")
			for _, cmd := range cmds {
				cmd.SetErr(err)
			}
			return err
		}
		return next(ctx, cmds)
	}
}

// A tick stuck for good does not stop the later ticks: they run beside it
// and keep the leases alive.
func TestStuckTickDoesNotStopLaterTicks(t *testing.T) {
	bubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, rt *redistest.RoundTrips, w *lease.Watchdog) {
		release := make(chan struct{})
		defer close(release)
		rdb.AddHook(stuckOnce{first: new(atomic.Bool), release: release})
		require.NoError(t, renew.Load(context.Background(), rdb).Err())
		var lost atomic.Int32
		add(t, rdb, w, "k", &lost)
		time.Sleep(5 * ttl)
		synctest.Wait()
		assert.Zero(t, lost.Load(), "renewed by the ticks after the stuck one")
		assert.Equal(t, 1, w.Len())
		assert.Equal(t, int64(1), rdb.Exists(context.Background(), "k").Val())
	})
}

// When every tick is stuck, each lease is still reported lost at its
// deadline, by the timer.
func TestAllTicksStuckLossOnTime(t *testing.T) {
	bubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, rt *redistest.RoundTrips, w *lease.Watchdog) {
		release := make(chan struct{})
		defer close(release)
		rdb.AddHook(stuckAll{release})
		var lost atomic.Int32
		start := time.Now()
		add(t, rdb, w, "k", &lost)
		time.Sleep(ttl - lease.Margin(ttl) - time.Millisecond)
		synctest.Wait()
		assert.Zero(t, lost.Load())
		time.Sleep(time.Millisecond)
		synctest.Wait()
		assert.Equal(t, int32(1), lost.Load(), "lost at its deadline, %v in", time.Since(start))
	})
}

// stuckAll is a go-redis hook whose pipelines never return until release
// is closed.
type stuckAll struct{ release chan struct{} }

func (stuckAll) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (stuckAll) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h stuckAll) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		<-h.release
		return errors.New("injected: stuck connection closed")
	}
}
