package locktest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
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

// The tests every primitive runs on Redis Cluster and through failovers, in
// three parts: holds on a healthy cluster and across a slot move; holds kept
// through failovers; double grants counted over failovers that lose writes.

// Exclusive is what an exclusive hold has, whatever the primitive:
// rlock.Mutex, rfairlock.Mutex and rrwlock.RWMutex's write side as they are,
// an ExpirableSemaphore of one permit through an adapter.
type Exclusive interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
	Token() uint64
	Lost() <-chan struct{}
}

// NewExclusive returns a handle on name for the Client c.
type NewExclusive func(c *redcoord.Client, name string) Exclusive

// lockKey returns the key of name's lock hash under the default prefix.
// Every key of a primitive has the {name} hash tag: its slot is theirs.
func lockKey(name string) string { return "rc:{" + name + "}:lock" }

// clusterRDB returns a ClusterClient of cl, closed by t.Cleanup, that
// reloads its slot map every 250ms. go-redis reloads it on MOVED and
// READONLY replies, but a killed master answers nothing: without a reload a
// client keeps sending its slots there, for 60 s by default.
func clusterRDB(t testing.TB, cl *redistest.Cluster) *redis.ClusterClient {
	return cl.Client(t, func(o *redis.ClusterOptions) { o.ClusterStateReloadInterval = 250 * time.Millisecond })
}

// spreadNames returns n names "<prefix>:<i>", for the first i that fit,
// whose slots spread as evenly as they can over the masters of cl, and fails
// the test unless every master serves at least one of them.
func spreadNames(t testing.TB, cl *redistest.Cluster, prefix string, n int) []string {
	t.Helper()
	masters := cl.Masters()
	require.NotEmpty(t, masters)
	per := make(map[string]int)
	var names []string
	for i := 0; len(names) < n && i < 100*n; i++ {
		name := fmt.Sprintf("%s:%d", prefix, i)
		m := cl.MasterFor(lockKey(name))
		require.Contains(t, masters, m, "the master of %s", name)
		if per[m] < (n+len(masters)-1)/len(masters) {
			per[m]++
			names = append(names, name)
		}
	}
	require.Len(t, names, n)
	for _, m := range masters {
		require.Positive(t, per[m], "master %s serves none of %v", m, names)
	}
	return names
}

// warnings returns a logger for Clients, and the records it kept at Warn or
// above: what went wrong out of the test's sight (a failed renewal, a lease
// lost, a refused subscription).
func warnings() (*slog.Logger, func() []string) {
	w := &lines{}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn})), w.get
}

// lines keeps what is written to it, one record a write.
type lines struct {
	mu sync.Mutex // guards l
	l  []string
}

func (w *lines) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.l = append(w.l, strings.TrimSpace(string(p)))
	return len(p), nil
}

func (w *lines) get() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.l)
}

// Occupancy is a critical section's own count of its occupants: a holder
// enters with its weight once it holds and leaves before it releases, so the
// count never lags behind Redis; an entry that finds more than limit inside
// is a violation. A mutex has limit 1 and weight 1; a semaphore its permits
// and the permits taken; a read-write lock with r readers r+1, and a writer
// weighs r+1, a reader 1.
type Occupancy struct {
	limit                    int64
	now, peak, over, entries atomic.Int64
	exclusive, counter       atomic.Int64 // entries of weight limit; a counter only they update
}

func (o *Occupancy) enter(w int64) {
	o.entries.Add(1)
	v := o.now.Add(w)
	for p := o.peak.Load(); v > p && !o.peak.CompareAndSwap(p, v); p = o.peak.Load() {
	}
	if v > o.limit {
		o.over.Add(1)
	}
}

func (o *Occupancy) leave(w int64) { o.now.Add(-w) }

// Peak returns the most occupants seen at once.
func (o *Occupancy) Peak() int64 { return o.peak.Load() }

// Entries returns how many holds entered.
func (o *Occupancy) Entries() int64 { return o.entries.Load() }

// Hold is one acquisition by worker w of name i, its k-th: it returns the
// weight the hold occupies and how to release it.
type Hold func(ctx context.Context, w, i, k int) (weight int64, release func(context.Context) error, err error)

// ClusterContend runs, within a minute, workers goroutines in 4 processes
// (Clients on ClusterClients of their own), rounds acquisitions each, worker
// w's k-th on name (w+k) mod 6, over 6 names "<prefix>:<i>" that the
// masters of cl serve two each; hold makes the Hold from the Clients and the
// names. Inside a hold the worker enters the name's Occupancy and yields; a
// hold of weight limit (an exclusive one) also increments a counter by
// read, yield and write, which loses updates if two exclusive holds overlap
// (its loads and stores are atomic only to keep the race detector, which
// cannot see the ordering Redis provides, quiet). It fails the test on any
// error, naming CROSSSLOT replies, on a violation, a lost update, a name
// never taken, or anything logged at Warn.
func ClusterContend(t *testing.T, cl *redistest.Cluster, prefix string, limit int64, workers, rounds int,
	hold func(cs []*redcoord.Client, names []string, workers int) Hold) []*Occupancy {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), redistest.Patience(time.Minute))
	defer cancel()
	names := spreadNames(t, cl, prefix, 6)
	log, warned := warnings()
	cs := make([]*redcoord.Client, 4)
	for i := range cs {
		cs[i] = NewClient(t, clusterRDB(t, cl), redcoord.WithLogger(log))
	}
	h := hold(cs, names, workers)
	occ := make([]*Occupancy, len(names))
	for i := range occ {
		occ[i] = &Occupancy{limit: limit}
	}
	start := time.Now()
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for k := range rounds {
				i := (w + k) % len(names)
				if err := occ[i].hold(ctx, h, w, i, k); err != nil {
					errs <- fmt.Errorf("worker %d, round %d, %s: %w", w, k, names[i], err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	t.Logf("%d acquisitions by %d workers in %d processes over %d names in %v", workers*rounds, workers, len(cs),
		len(names), time.Since(start).Round(time.Millisecond))
	var all []error
	for err := range errs {
		all = append(all, err)
		assert.NotContains(t, err.Error(), "CROSSSLOT", "a script touched keys of two slots")
	}
	require.NoError(t, errors.Join(all...))
	for i, o := range occ {
		assert.Zero(t, o.over.Load(), "%s: more than %d inside at once", names[i], limit)
		assert.Equal(t, o.exclusive.Load(), o.counter.Load(), "%s: lost updates", names[i])
		assert.Positive(t, o.Entries(), "%s never taken", names[i])
	}
	assert.Empty(t, warned(), "nothing logged at Warn")
	return occ
}

// hold is one round of ClusterContend on o's name.
func (o *Occupancy) hold(ctx context.Context, h Hold, w, i, k int) error {
	weight, release, err := h(ctx, w, i, k)
	if err != nil {
		return err
	}
	o.enter(weight)
	if weight == o.limit {
		o.exclusive.Add(1)
		v := o.counter.Load() // not an atomic increment: the lock must make it one
		runtime.Gosched()
		o.counter.Store(v + 1)
	}
	runtime.Gosched()
	o.leave(weight)
	return release(ctx)
}

// ClusterSuite runs the cluster tests of an exclusive lock as subtests, on
// one cluster of 3 masters (starting one takes about two seconds):
// "MutualExclusion", ClusterContend of 16 goroutines with 200 acquisitions
// each, each goroutine with a handle of its own per name;
// "ReshardWhileWaiting"; and a subtest "More" for each of more, on the same
// cluster.
func ClusterSuite(t *testing.T, newX NewExclusive, more ...func(t *testing.T, cl *redistest.Cluster)) {
	cl := redistest.StartCluster(t, 3, 0)
	t.Run("MutualExclusion", func(t *testing.T) {
		ClusterContend(t, cl, "excl", 1, 16, 200, func(cs []*redcoord.Client, names []string, workers int) Hold {
			handles := make([][]Exclusive, workers)
			for w := range handles {
				for _, name := range names {
					handles[w] = append(handles[w], newX(cs[w%len(cs)], name))
				}
			}
			return func(ctx context.Context, w, i, _ int) (int64, func(context.Context) error, error) {
				x := handles[w][i]
				return 1, x.Unlock, x.Lock(ctx)
			}
		})
	})
	t.Run("ReshardWhileWaiting", func(t *testing.T) { ReshardWhileWaiting(t, cl, newX) })
	for _, f := range more {
		t.Run("More", func(t *testing.T) { f(t, cl) })
	}
}

// ReshardWhileWaiting takes a hold with a 500ms lease, starts four waiters
// in other Clients, moves the name's slot to another master while they wait
// (cl.MoveSlot), and keeps the hold two leases more, so that only renewals
// sent to the new master keep it. The hold must survive (Lost stays open and
// no waiter gets in) and its release succeed; then every waiter must
// acquire, one at a time, each holding past a lease of its own without
// losing it, with fencing tokens strictly increasing from the holder's; and
// nothing may be logged at Warn.
func ReshardWhileWaiting(t *testing.T, cl *redistest.Cluster, newX NewExclusive) {
	const (
		ttl     = 500 * time.Millisecond
		waiters = 4
		name    = "reshard"
	)
	ctx, cancel := context.WithTimeout(context.Background(), redistest.Patience(30*time.Second))
	defer cancel()
	log, warned := warnings()
	cs := make([]*redcoord.Client, 1+waiters)
	for i := range cs {
		cs[i] = NewClient(t, clusterRDB(t, cl), redcoord.WithLeaseTTL(ttl), redcoord.WithLogger(log))
	}
	from := cl.MasterFor(lockKey(name))
	to := cl.Masters()[0]
	if to == from {
		to = cl.Masters()[1]
	}
	slot, err := clusterRDB(t, cl).ClusterKeySlot(ctx, lockKey(name)).Result()
	require.NoError(t, err)

	holder := newX(cs[0], name)
	require.NoError(t, holder.Lock(ctx))
	occ := &Occupancy{limit: 1}
	var (
		mu     sync.Mutex
		tokens []uint64 // in the order of acquisition
	)
	results := make(chan error, waiters)
	for _, c := range cs[1:] {
		x := newX(c, name)
		go func() {
			if err := x.Lock(ctx); err != nil {
				results <- err
				return
			}
			occ.enter(1)
			mu.Lock()
			tokens = append(tokens, x.Token())
			mu.Unlock()
			time.Sleep(ttl + ttl/3) // past a lease: renewed by the watchdog on the new master
			lost := IsClosed(x.Lost())
			occ.leave(1)
			err := x.Unlock(ctx)
			if lost {
				err = errors.Join(errors.New("a waiter's hold was lost"), err)
			}
			results <- err
		}()
	}
	Eventually(t, func() bool { return hubWaiters(t, cs[1:]...) == waiters }, "every waiter waiting")

	start := time.Now()
	moved := cl.MoveSlot(t, int(slot), to)
	t.Logf("moved slot %d (%d keys) from %s to %s in %v while %d waiters waited", slot, moved, from, to,
		time.Since(start).Round(time.Millisecond), waiters)
	require.Equal(t, to, cl.MasterFor(lockKey(name)))
	require.Positive(t, moved, "the hold's keys moved")
	time.Sleep(2 * ttl) // only renewals on the new master keep the hold now
	require.False(t, IsClosed(holder.Lost()), "the holder's lease was not renewed on the new master")
	require.Zero(t, occ.Entries(), "a waiter got in while the holder held")
	first := holder.Token()
	require.NoError(t, holder.Unlock(ctx))

	for range waiters {
		select {
		case err := <-results:
			require.NoError(t, err)
		case <-ctx.Done():
			t.Fatalf("waiters not done within 30s: %d of %d acquired", occ.Entries(), waiters)
		}
	}
	assert.Zero(t, occ.over.Load(), "two holders at once")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, tokens, waiters)
	assert.Greater(t, tokens[0], first, "a waiter's token after the holder's %d: %v", first, tokens)
	assert.True(t, slices.IsSorted(tokens) && len(slices.Compact(slices.Clone(tokens))) == waiters,
		"tokens strictly increasing in the order of acquisition: %v", tokens)
	assert.Empty(t, warned(), "nothing logged at Warn")
}

// hubWaiters returns how many waiters the Hubs of cs have.
func hubWaiters(t testing.TB, cs ...*redcoord.Client) int {
	n := 0
	for _, c := range cs {
		hub, err := c.Hub()
		require.NoError(t, err)
		n += hub.Stats().Waiters
	}
	return n
}

// Holds through failovers.

// failoverTTL is the lease TTL of the holds kept through failovers: shorter
// than a killed primary's replacement takes, so that both outcomes happen,
// a hold that survives on the new primary and one whose lease runs out.
const failoverTTL = 1500 * time.Millisecond
