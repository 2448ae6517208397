package locktest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/redistest"
)

// hookedRDB is a go-redis client a hook can watch: *redis.Client (also
// from redistest.Sentinel.FailoverClient) and *redis.ClusterClient.
type hookedRDB interface {
	redcoord.Redis
	AddHook(redis.Hook)
}

// procs are a holder's and a waiter's Clients, each on connections of its
// own, and the holder's own account of its lease.
type procs struct {
	holder, waiter *redcoord.Client
	ttl            time.Duration // the holder's lease TTL
	clock          *leaseClock
	waiting        *waitSignal // the waiter's Client's Waiting events
}

// newProcs makes the holder's Client with lease TTL ttl and opts, and the
// waiter's with the same TTL and a 20ms poll interval (a waiter that finds
// a hold just gone takes it at once), each on an RDB of its own from rdb.
func newProcs(t testing.TB, rdb func() hookedRDB, ttl time.Duration, opts ...redcoord.Option) *procs {
	p := &procs{ttl: ttl, clock: &leaseClock{}, waiting: &waitSignal{}}
	h := rdb()
	h.AddHook(p.clock)
	p.holder = NewClient(t, h, append([]redcoord.Option{redcoord.WithLeaseTTL(ttl)}, opts...)...)
	p.waiter = NewClient(t, rdb(), redcoord.WithLeaseTTL(ttl), redcoord.WithMaxPollInterval(20*time.Millisecond),
		redcoord.WithObserver(p.waiting.observe))
	return p
}

// waitSignal tells a scenario that the waiter's acquire began to wait (its
// Client's Waiting event): it found the name taken. Whether it then waits
// subscribed or polling is not the point: a subscription not confirmed
// within the poll interval (20ms, easily missed on a loaded machine) makes
// the wait poll, and the Hub never counts it.
type waitSignal struct {
	mu sync.Mutex
	ch chan struct{} // closed at the next Waiting event; nil when none is expected
}

// next returns a channel that the next Waiting event closes.
func (w *waitSignal) next() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ch = make(chan struct{})
	return w.ch
}

func (w *waitSignal) observe(e redcoord.Event) {
	if e.Kind != redcoord.Waiting {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch != nil {
		close(w.ch)
		w.ch = nil
	}
}

// leaseClock is a go-redis hook that keeps a holder's own account of its
// lease, as its watchdog does: the lease ends one TTL after the later of the
// acquire's start and the sending of the last pipeline that renewed
// something (replied 1).
type leaseClock struct{ last atomic.Int64 } // UnixNano

func (c *leaseClock) start(at time.Time) { c.last.Store(at.UnixNano()) }

// holds reports whether the lease has not run out by the holder's clock.
func (c *leaseClock) holds(ttl time.Duration) bool {
	return time.Now().Before(time.Unix(0, c.last.Load()).Add(ttl))
}

func (c *leaseClock) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (c *leaseClock) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (c *leaseClock) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		sent := time.Now().UnixNano()
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if r, ok := cmd.(*redis.Cmd); ok && r.Err() == nil && r.Val() == int64(1) {
				for last := c.last.Load(); sent > last && !c.last.CompareAndSwap(last, sent); last = c.last.Load() {
				}
			}
		}
		return err
	}
}

// scenarioTimeout, stretched by redistest.Patience, bounds every call of one
// hold through a failover: an idle machine ends the longest (a Sentinel
// primary killed) in about fifteen seconds.
const scenarioTimeout = 30 * time.Second

// scenario is one hold through a failover.
type scenario struct {
	failover func() // returns once a new primary serves the name
	// during starts the failover delay after the holder's acquire is sent,
	// and the waiter after the failover (a trial), rather than the failover
	// once the holder holds and the waiter waits.
	during bool
	delay  time.Duration
	hold   time.Duration // how long the holder keeps its hold after the failover
}

// outcome is what happened in one hold through a failover.
type outcome struct {
	lockErr      error // the holder's acquire failed (as WithWaitReplicas may make it)
	lost         bool  // the holder saw Lost before it released
	double       bool  // the waiter acquired while the holder held by its own account
	tokens       [2]uint64
	retries      int    // the waiter's acquires that ended in an error and were made again
	retryErr     error  // the last of those errors
	waiterLocked error  // the waiter's last acquire
	token        uint64 // the waiter's token as its acquire returned
}

func (o outcome) String() string {
	return fmt.Sprintf("the holder's acquire: %v; lost: %v; double grant: %v; tokens %d then %d; "+
		"the waiter's acquire failed %d times (%v)",
		o.lockErr, o.lost, o.double, o.tokens[0], o.tokens[1], o.retries, o.retryErr)
}

// holdThroughFailover has p's holder take name with newX and keep it
// through sc, then release it, while p's waiter waits to take it (trying
// again, every 50ms, an acquire that a failing node ends with an error),
// all within scenarioTimeout. It returns what happened, and checks what
// must hold whatever the failover lost: the holder's release fails with
// ErrNotHeld if its hold was lost or taken by another, and succeeds
// otherwise (or stands unacknowledged, with WithWaitReplicas); after a
// double grant the holder sees Lost within a lease TTL (it cannot believe
// any longer that it holds what another holds); the waiter acquires in
// the end.
func holdThroughFailover(t *testing.T, p *procs, name string, newX NewExclusive, sc scenario) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), redistest.Patience(scenarioTimeout))
	defer cancel()
	holder, waiter := newX(p.holder, name), newX(p.waiter, name)
	p.clock.start(time.Now())
	locked := make(chan error, 1)
	go func() { locked <- holder.Lock(ctx) }()
	if sc.during {
		time.Sleep(sc.delay)
		sc.failover()
	}
	var o outcome
	o.lockErr = <-locked
	lost := holder.Lost()
	o.tokens[0] = holder.Token()
	var released atomic.Bool // by the holder, or never held
	released.Store(o.lockErr != nil)
	got := make(chan outcome, 1)
	ended := make(chan struct{}) // closed once got has the waiter's outcome
	wait := func() {
		go func() {
			defer close(ended)
			var r outcome
			r.retries, r.retryErr, r.waiterLocked = lockRetrying(ctx, waiter)
			r.token = waiter.Token() // as it returned: the hold may be lost by the time it is checked
			r.double = r.waiterLocked == nil && !released.Load() && !IsClosed(lost) && p.clock.holds(p.ttl)
			got <- r
		}()
	}
	switch {
	case sc.during:
		wait()
	case o.lockErr == nil: // the waiter waits through the failover
		waiting := p.waiting.next()
		wait()
		// Until it waits, or its acquire has ended: at the latest when
		// ctx ends, and the waiter's error then fails the test below.
		select {
		case <-waiting:
		case <-ended:
		}
		sc.failover()
	default: // nothing to wait for: a hold taken now would not survive the failover
		sc.failover()
		wait()
	}
	time.Sleep(sc.hold)

	var early *outcome
	select {
	case r := <-got:
		early = &r
	default:
	}
	if early != nil && early.double {
		select {
		case <-lost:
		case <-time.After(p.ttl + redistest.Patience(time.Second)):
			t.Errorf("the holder still believes it holds %q a lease TTL after another acquired it", name)
		}
	}
	if o.lockErr == nil {
		o.lost = IsClosed(lost)
		released.Store(true)
		err := holder.Unlock(ctx)
		switch {
		case errors.Is(err, redcoord.ErrNotReplicated): // the release stands, unacknowledged
		case early != nil || o.lost:
			assert.ErrorIs(t, err, redcoord.ErrNotHeld, "the release of a hold lost or taken by another")
		case err != nil:
			assert.ErrorIs(t, err, redcoord.ErrNotHeld, "a release that fails")
			assert.True(t, IsClosed(lost), "a release that fails with %v, but Lost is open", err)
		}
	}
	r := early
	if r == nil {
		v := <-got // bounded by ctx
		r = &v
	}
	require.NoError(t, r.waiterLocked, "the waiter's acquire (after %d failed: %v)", r.retries, r.retryErr)
	o.double, o.retries, o.retryErr = r.double, r.retries, r.retryErr
	o.tokens[1] = r.token
	// The waiter's lease (failoverTTL) may run out on a loaded machine
	// before this release, while its Client still finds its way to the
	// new primary: a documented outcome, and not what the scenario tests.
	if err := waiter.Unlock(ctx); errors.Is(err, redcoord.ErrLeaseLost) {
		t.Logf("the waiter's release: %v", err)
	} else {
		assert.NoError(t, err, "the waiter's release")
	}
	return o
}

// lockRetrying calls x.Lock until it succeeds or ctx ends, at most 200
// times, 50ms apart; it returns how many calls failed and the last error.
func lockRetrying(ctx context.Context, x Exclusive) (retries int, last, err error) {
	for ; retries < 200; retries++ {
		if err = x.Lock(ctx); err == nil || ctx.Err() != nil {
			return retries, last, err
		}
		last = err
		select {
		case <-ctx.Done():
			return retries, last, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return retries, last, err
}

// waitReplicated returns once every write the primary at addr has applied
// so far has reached a replica: it writes key there (with a minute's TTL)
// and sends WAIT for one replica on the same connection, for at most
// redistest.Patience(5s).
func waitReplicated(t testing.TB, addr, key string) {
	t.Helper()
	bound := redistest.Patience(5 * time.Second)
	// A pipeline reads with ReadTimeout, whatever WAIT's own timeout.
	rdb := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true, ReadTimeout: bound + time.Second})
	defer rdb.Close()
	ctx := context.Background()
	var wait *redis.IntCmd
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, key, "sync", time.Minute)
		wait = redis.NewIntCmd(ctx, "WAIT", 1, bound.Milliseconds())
		return p.Process(ctx, wait)
	})
	require.NoError(t, err)
	n, err := wait.Result()
	require.NoError(t, err)
	require.Positive(t, n, "no replica of %s acknowledged", addr)
}

// checkFailover logs o and checks what a failover that lost no acquire must
// keep: the hold was taken and the waiter's fencing token is above the
// holder's; and no double grant, unless mayDouble.
func checkFailover(t *testing.T, o outcome, mayDouble bool) {
	t.Helper()
	t.Log(o)
	require.NoError(t, o.lockErr)
	assert.Greater(t, o.tokens[1], o.tokens[0], "fencing tokens")
	if !mayDouble {
		assert.False(t, o.double, "the waiter acquired while the holder held by its own account")
	}
}

// FailoverSuites runs two parallel subtests, each spending most of its
// time waiting for a topology to settle:
//
// "Cluster", on 3 masters with a replica each and three names that the
// three masters serve, in order: "Manual", a hold kept through CLUSTER
// FAILOVER of the first name's master, which loses no write the master
// acknowledged: no double grant, and the waiter's token above the holder's;
// "Kill", a hold kept through SIGKILL of the second name's master, once the
// hold has reached its replica, which takes over a few seconds later: the
// lease runs out meanwhile, or survives if the replacement is quick, and
// holder and new master agree which (no double grant); then, when
// clusterTrials > 0, "DoubleGrants" (clusterGrants, skipped with -short) and
// "StoppedReplica" (stoppedReplica, on the third name, then the first).
//
// "Sentinel", on a primary with a replica and three sentinels, in order:
// "Failover", a hold kept through SENTINEL FAILOVER once it reached the
// replica; then, when sentinelTrials > 0, "DoubleGrants" (sentinelGrants,
// skipped with -short); and "KillPrimary", a hold kept through SIGKILL of
// the primary once it reached the replica (no double grant). In "Failover"
// the old primary stays a writable master for ten seconds, and the holder's
// renewals reach it until its client hears +switch-master: its lease may
// run out on the new primary while it holds by its own account. That double
// grant is logged, not failed. With redcoord.WithWaitReplicas those
// renewals go unacknowledged (the old primary has lost its replica), and
// the holder's watchdog reports the hold Lost before the new primary lets
// it go: "DoubleGrants" logs both counts.
//
// REDCOORD_SENTINEL_TRIALS, when set to a positive number, replaces
// sentinelTrials: CI runs a few (each costs ten seconds), a closing note
// quotes a longer run.
func FailoverSuites(t *testing.T, newX NewExclusive, clusterTrials, sentinelTrials int) {
	if n, err := strconv.Atoi(os.Getenv("REDCOORD_SENTINEL_TRIALS")); err == nil && n > 0 {
		sentinelTrials = n
	}
	t.Cleanup(waitDialProbes) // runs last, after every Client and go-redis client is closed
	t.Run("Cluster", func(t *testing.T) {
		t.Parallel()
		clusterSuite(t, newX, clusterTrials)
	})
	t.Run("Sentinel", func(t *testing.T) {
		t.Parallel()
		s := redistest.StartSentinel(t)
		p := newProcs(t, func() hookedRDB { return s.FailoverClient(t) }, failoverTTL)
		t.Run("Failover", func(t *testing.T) {
			checkFailover(t, holdThroughFailover(t, p, "failover", newX, scenario{hold: failoverTTL * 3 / 2, failover: func() {
				waitReplicated(t, s.Primary(), "sync")
				s.Failover(t)
			}}), true)
		})
		if sentinelTrials > 0 {
			t.Run("DoubleGrants", func(t *testing.T) {
				if testing.Short() {
					t.Skipf("%d failovers of ten seconds per run", sentinelTrials)
				}
				for _, run := range waitRuns() {
					t.Logf("%s %s", sentinelGrants(t, s, "trials", sentinelTrials, newX, run.opts...), run.name)
				}
			})
		}
		t.Run("KillPrimary", func(t *testing.T) {
			s.WaitHealthy(t) // the previous primary is a replica again
			checkFailover(t, holdThroughFailover(t, p, "kill", newX, scenario{hold: failoverTTL * 3 / 2, failover: func() {
				waitReplicated(t, s.Primary(), "sync")
				s.WaitPrimary(t, s.KillPrimary(t))
			}}), false)
		})
	})
}

// waitDialProbes waits, at most 3s, until no go-redis dial probe is left
// running. A go-redis pool whose dials to a node (a killed one) failed
// PoolSize times probes the node every second in a goroutine that notices
// the pool's Close only after its sleep, up to a second later: goleak
// would report it.
func waitDialProbes() {
	buf := make([]byte, 1<<20)
	for range 60 {
		if n := runtime.Stack(buf, true); !bytes.Contains(buf[:n], []byte("(*ConnPool).tryDial")) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// clusterSuite is the "Cluster" subtest of FailoverSuites.
func clusterSuite(t *testing.T, newX NewExclusive, trials int) {
	cl := redistest.StartCluster(t, 3, 1)
	names := spreadNames(t, cl, "failover", 3)
	p := newProcs(t, func() hookedRDB { return clusterRDB(t, cl) }, failoverTTL)
	t.Run("Manual", func(t *testing.T) {
		checkFailover(t, holdThroughFailover(t, p, names[0], newX, scenario{hold: failoverTTL * 3 / 2, failover: func() {
			cl.Failover(t, cl.MasterFor(lockKey(names[0])))
		}}), false)
	})
	t.Run("Kill", func(t *testing.T) {
		checkFailover(t, holdThroughFailover(t, p, names[1], newX, scenario{hold: failoverTTL * 3 / 2, failover: func() {
			m := cl.MasterFor(lockKey(names[1]))
			waitReplicated(t, m, "rc:{"+names[1]+"}:sync")
			cl.Kill(t, m)
			cl.WaitHealthy(t)
		}}), false)
	})
	if trials == 0 {
		return
	}
	t.Run("DoubleGrants", func(t *testing.T) {
		if testing.Short() {
			t.Skipf("%d failovers per run", trials)
		}
		for _, run := range waitRuns() {
			t.Logf("%s %s", clusterGrants(t, cl, names[0], trials, newX, run.opts...), run.name)
		}
	})
	// Without WAIT the acquire that the replica missed is a double grant
	// every time, and the waiter gets the holder's very fencing token; with
	// it the acquire fails with ErrNotReplicated. A killed master's slots
	// have no replica left: the third name's after the first run, the
	// second's (Kill) already; two runs at most.
	t.Run("StoppedReplica", func(t *testing.T) {
		for i, run := range waitRuns() {
			o := stoppedReplica(t, cl, []string{names[2], names[0]}[i], newX, run.opts...)
			t.Logf("%s: %v", run.name, o)
			if len(run.opts) == 0 {
				assert.NoError(t, o.lockErr)
				assert.True(t, o.double, "a double grant, %s", run.name)
			} else {
				assert.ErrorIs(t, o.lockErr, redcoord.ErrNotReplicated, run.name)
				assert.False(t, o.double, "a double grant, %s", run.name)
			}
		}
	})
}

// stoppedReplica makes the acquire of name miss the one replica of its
// master for sure, then fails over to that replica, as a crash does at the
// worst moment: it stops the replica (SIGSTOP), cuts its replication link,
// takes the hold with a Client made with opts, kills the master, resumes
// the replica and promotes it (CLUSTER FAILOVER TAKEOVER); a waiter in
// another Client, waiting all along, then finds the name free. The lease
// TTL, 20s, outlasts the scenario on a loaded machine: the holder's own
// account of its lease runs from the start of its acquire, so a shorter one
// could run out, by that account, while a slow acquire and failover were
// still under way, and the waiter's hold would not count as a double grant;
// the holder finds out at its first renewal, a third of it later. The
// master's slots have no replica left after it.
func stoppedReplica(t *testing.T, cl *redistest.Cluster, name string, newX NewExclusive,
	opts ...redcoord.Option) outcome {
	m := cl.MasterFor(lockKey(name))
	reps := cl.ReplicasOf(m)
	require.Len(t, reps, 1, "the replicas of %s", m)
	p := newProcs(t, func() hookedRDB { return clusterRDB(t, cl) }, 20*time.Second, opts...)
	cl.Stop(t, reps[0])
	stopped := true
	defer func() {
		if stopped {
			cl.Cont(t, reps[0])
		}
	}()
	require.Equal(t, 1, cl.CutReplicas(t, m), "replication links cut")
	return holdThroughFailover(t, p, name, newX, scenario{hold: 2 * time.Second, failover: func() {
		cl.Kill(t, m)
		cl.Cont(t, reps[0])
		stopped = false
		cl.Takeover(t, reps[0])
		cl.WaitHealthy(t)
	}})
}

// Double grants counted over failovers that may lose writes.

// run is one run of the double-grant counts: the holder's Client options.
type run struct {
	name string
	opts []redcoord.Option
}

// waitRuns returns the runs of the double-grant counts: without WAIT, and
// with redcoord.WithWaitReplicas(1, 100ms) for the holder.
func waitRuns() []run {
	return []run{
		{"without WithWaitReplicas", nil},
		{"with WithWaitReplicas(1, 100ms)", []redcoord.Option{redcoord.WithWaitReplicas(1, 100*time.Millisecond)}},
	}
}

// grants counts the outcomes of countGrants.
type grants struct {
	trials, double, sameToken, lost, notAcquired int
}

func (g grants) String() string {
	return fmt.Sprintf("double grants: %d of %d trials (%d with a fencing token not above the holder's); "+
		"the holder saw Lost in %d, its acquire failed in %d", g.double, g.trials, g.sameToken, g.lost, g.notAcquired)
}

// countGrants runs n trials on name, each the scenario that trial returns
// for a random delay in [0, 2ms), with settle after each, and counts what
// happened. It logs the delays' seed.
func countGrants(t *testing.T, n int, p *procs, name string, newX NewExclusive,
	trial func(delay time.Duration) scenario, settle func()) grants {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	t.Logf("delays' seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	var g grants
	for range n {
		o := holdThroughFailover(t, p, name, newX, trial(time.Duration(rng.Int64N(int64(2*time.Millisecond)))))
		g.trials++
		switch {
		case o.lockErr != nil:
			g.notAcquired++
		case o.double:
			g.double++
		case o.lost:
			g.lost++
		}
		if o.lockErr == nil && o.tokens[1] <= o.tokens[0] {
			g.sameToken++
		}
		settle()
	}
	return g
}

// clusterGrants counts double grants over n trials on cl whose failovers
// may lose the holder's acquire: the holder (a Client made with opts) sends
// its acquire of name and, a random 0 to 2ms later, the replica of name's
// master takes over (CLUSTER FAILOVER TAKEOVER), so that the acquire, if it
// has not reached the replica yet, is lost; a waiter in another Client then
// tries to take name, and the holder releases 200ms later. Each trial fails
// over the other way from the one before, once the old master has rejoined
// as a replica.
func clusterGrants(t *testing.T, cl *redistest.Cluster, name string, n int, newX NewExclusive,
	opts ...redcoord.Option) grants {
	p := newProcs(t, func() hookedRDB { return clusterRDB(t, cl) }, failoverTTL, opts...)
	return countGrants(t, n, p, name, newX, func(delay time.Duration) scenario {
		reps := cl.ReplicasOf(cl.MasterFor(lockKey(name)))
		require.Len(t, reps, 1)
		return scenario{during: true, delay: delay, hold: 200 * time.Millisecond,
			failover: func() { cl.Takeover(t, reps[0]) }}
	}, func() { cl.WaitHealthy(t) })
}

// sentinelGrants is clusterGrants with Sentinel: the failover is SENTINEL
// FAILOVER (about a second and a half), the holder releases 2s after it,
// and each trial first waits until the sentinels have made the previous
// primary a replica (about ten seconds).
func sentinelGrants(t *testing.T, s *redistest.Sentinel, name string, n int, newX NewExclusive,
	opts ...redcoord.Option) grants {
	p := newProcs(t, func() hookedRDB { return s.FailoverClient(t) }, failoverTTL, opts...)
	return countGrants(t, n, p, name, newX, func(delay time.Duration) scenario {
		s.WaitHealthy(t)
		return scenario{during: true, delay: delay, hold: 2 * time.Second, failover: func() { s.Failover(t) }}
	}, func() {})
}
