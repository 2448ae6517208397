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
	"github.com/redcoord/redcoord/rfairlock"
	"github.com/redcoord/redcoord/rlock"
	"github.com/redcoord/redcoord/rrwlock"
	"github.com/redcoord/redcoord/rsemaphore"
)

func TestWithWaitReplicasRejectsBadValues(t *testing.T) {
	rdb := redistest.Mini(t).Client(t)
	for _, opt := range []redcoord.Option{
		redcoord.WithWaitReplicas(0, time.Second),
		redcoord.WithWaitReplicas(-1, time.Second),
		redcoord.WithWaitReplicas(1, 0), // WAIT 0 would block forever
		redcoord.WithWaitReplicas(1, -time.Millisecond),
	} {
		_, err := redcoord.New(rdb, opt)
		assert.ErrorIs(t, err, redcoord.ErrInvalidArgument)
		assert.ErrorContains(t, err, "WithWaitReplicas")
	}
	for _, opts := range [][]redcoord.Option{
		{redcoord.WithWaitReplicas(1, 10*time.Second)}, // the default TTL is 30s: a renewal every 10s
		{redcoord.WithLeaseTTL(3 * time.Second), redcoord.WithWaitReplicas(1, 2*time.Second)},
		{redcoord.WithWaitReplicas(1, time.Second), redcoord.WithLeaseTTL(3 * time.Second)},
	} {
		_, err := redcoord.New(rdb, opts...)
		assert.ErrorIs(t, err, redcoord.ErrInvalidArgument)
		assert.ErrorContains(t, err, "WithWaitReplicas: timeout")
		assert.ErrorContains(t, err, "under a third of the lease TTL")
	}
	c, err := redcoord.New(rdb, redcoord.WithWaitReplicas(2, 300*time.Microsecond)) // taken as 1ms
	require.NoError(t, err)
	require.NoError(t, c.Close(context.Background()))
}

// subject is one kind of acquire and its release, for the WithWaitReplicas
// tests: every primitive, read and write holds, fair and unfair.
type subject struct {
	kind    string
	name    string
	acquire func(context.Context) error
	release func(context.Context) error
	held    func(context.Context) (int64, error) // holds or permits taken; 0: none
}

// subjects returns one subject of each kind on c, each on its own name
// starting with prefix; the semaphores are set to 2 permits, of which each
// acquire takes 2 (an ExpirableSemaphore: 1 of 1).
func subjects(t *testing.T, c *redcoord.Client, prefix string) []subject {
	ctx := context.Background()
	lock := rlock.New(c, prefix+"rlock")
	fair := rfairlock.New(c, prefix+"rfairlock")
	rw := rrwlock.New(c, prefix+"rrwlock")
	sem := rsemaphore.New(c, prefix+"sem")
	fsem := rsemaphore.New(c, prefix+"fsem", rsemaphore.WithFair())
	xsem := rsemaphore.NewExpirable(c, prefix+"xsem")
	require.NoError(t, sem.SetPermits(ctx, 2))
	require.NoError(t, fsem.SetPermits(ctx, 2))
	require.NoError(t, xsem.SetPermits(ctx, 1))
	rwHeld := func(ctx context.Context) (int64, error) {
		st, err := rw.State(ctx)
		return int64(len(st.Readers)) + int64(st.Writer.Count), err
	}
	taken := func(s *rsemaphore.Semaphore) func(context.Context) (int64, error) {
		return func(ctx context.Context) (int64, error) {
			n, err := s.Available(ctx)
			return 2 - n, err
		}
	}
	var permit rsemaphore.Permit
	return []subject{
		{"rlock", lock.Name(), lock.Lock, lock.Unlock, lock.HoldCount},
		{"rfairlock", fair.Name(), fair.Lock, fair.Unlock, fair.HoldCount},
		{"rrwlock write", rw.Name(), rw.Lock, rw.Unlock, rwHeld},
		{"rrwlock read", rw.Name(), rw.RLock, rw.RUnlock, rwHeld},
		{"Semaphore", sem.Name(), func(ctx context.Context) error { return sem.Acquire(ctx, 2) },
			func(ctx context.Context) error { return sem.Release(ctx, 2) }, taken(sem)},
		{"Semaphore WithFair", fsem.Name(), func(ctx context.Context) error { return fsem.Acquire(ctx, 2) },
			func(ctx context.Context) error { return fsem.Release(ctx, 2) }, taken(fsem)},
		{"ExpirableSemaphore", xsem.Name(), func(ctx context.Context) (err error) {
			permit, err = xsem.Acquire(ctx, rsemaphore.AcquireOptions{})
			return err
		}, func(ctx context.Context) error { return xsem.Release(ctx, permit) }, xsem.Acquired},
	}
}

// snapshot returns the content of every key in rdb's server but fence
// counters (a token handed out is never taken back), request markers and
// release markers (which remember requests so retries are not applied
// twice), as text.
func snapshot(t *testing.T, rdb *redis.Client) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, "*").Result()
	require.NoError(t, err)
	out := make(map[string]string)
	for _, k := range locktest.WithoutMarkers(keys) {
		if strings.HasSuffix(k, "fence") || strings.HasSuffix(k, ":done") {
			continue
		}
		var v any
		switch typ := rdb.Type(ctx, k).Val(); typ {
		case "string":
			v, err = rdb.Get(ctx, k).Result()
		case "hash":
			v, err = rdb.HGetAll(ctx, k).Result()
		case "zset":
			v, err = rdb.ZRangeWithScores(ctx, k, 0, -1).Result()
		case "list":
			v, err = rdb.LRange(ctx, k, 0, -1).Result()
		case "none": // expired meanwhile
			continue
		default:
			t.Fatalf("key %s of type %s", k, typ)
		}
		require.NoError(t, err)
		out[k] = fmt.Sprint(v)
	}
	return out
}

// With a replica that keeps up, every acquire and release succeeds; the
// replica has the acquire's writes when it returns, and an uncontended
// acquire or release is still one round trip: the script and WAIT are
// pipelined.
func TestWaitReplicasAcknowledged(t *testing.T) {
	ctx := context.Background()
	pair := redistest.StartReplicated(t)
	rdb, probe := pair.Primary.Client(t), pair.Primary.Client(t)
	replica := pair.Replica.Client(t)
	rt := &redistest.RoundTrips{}
	rdb.AddHook(rt)
	c := locktest.NewClient(t, rdb, redcoord.WithWaitReplicas(1, 2*time.Second))
	for _, s := range subjects(t, c, "ack-") {
		require.NoError(t, s.acquire(ctx), s.kind) // loads the scripts
		require.NoError(t, s.release(ctx), s.kind)
		rt.Reset()
		require.NoError(t, s.acquire(ctx), s.kind)
		assert.Equal(t, int64(1), rt.Load(), "%s: acquire round trips", s.kind)
		assert.Equal(t, int64(1), rt.Commands("wait"), s.kind)
		assert.Equal(t, snapshot(t, probe), snapshot(t, replica), "%s: the replica has the hold", s.kind)
		require.NoError(t, s.release(ctx), s.kind)
		assert.Equal(t, int64(2), rt.Load(), "%s: acquire and release round trips", s.kind)
		assert.Equal(t, int64(2), rt.Commands("wait"), s.kind)
		n, err := s.held(ctx)
		require.NoError(t, err)
		assert.Zero(t, n, s.kind)
	}
}

// Without the option nothing is added: no WAIT, not a round trip.
func TestNoWaitReplicasNoWait(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Real(t).Client(t)
	rt := &redistest.RoundTrips{}
	rdb.AddHook(rt)
	c := locktest.NewClient(t, rdb)
	for _, s := range subjects(t, c, "nowait-") {
		require.NoError(t, s.acquire(ctx), s.kind)
		require.NoError(t, s.release(ctx), s.kind)
	}
	assert.Zero(t, rt.Commands("wait"))
}

// A server without replicas acknowledges nothing: every acquire waits out
// the timeout, is undone and returns ErrNotReplicated (and ErrNotAcquired),
// and Redis is as it was. A release stands, and says it was not replicated.
func TestWaitReplicasWithoutReplica(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Real(t).Client(t)
	const timeout = 50 * time.Millisecond
	c := locktest.NewClient(t, rdb, redcoord.WithWaitReplicas(1, timeout))
	for _, s := range subjects(t, c, "none-") {
		before := snapshot(t, rdb)
		start := time.Now()
		err := s.acquire(ctx)
		assert.ErrorIs(t, err, redcoord.ErrNotReplicated, s.kind)
		assert.ErrorIs(t, err, redcoord.ErrNotAcquired, s.kind)
		assert.ErrorContains(t, err, "0 of 1 replicas acknowledged", s.kind)
		assert.GreaterOrEqual(t, time.Since(start), timeout, s.kind)
		assert.Equal(t, before, snapshot(t, rdb), "%s: Redis is as it was", s.kind)
		n, err := s.held(ctx)
		require.NoError(t, err)
		assert.Zero(t, n, s.kind)
	}

	lock := rlock.New(c, "none-try")
	ok, err := lock.TryLock(ctx)
	assert.False(t, ok)
	assert.ErrorIs(t, err, redcoord.ErrNotReplicated)
	assert.Zero(t, lock.Token())
	assert.Zero(t, rdb.Exists(ctx, "rc:{none-try}:lock").Val())

	// Releases: permits have no owner, so a Client without the option takes
	// them and one with it gives them back.
	plain := locktest.NewClient(t, rdb)
	sem := rsemaphore.New(plain, "none-rel")
	require.NoError(t, sem.SetPermits(ctx, 3))
	require.NoError(t, sem.Acquire(ctx, 3))
	err = rsemaphore.New(c, "none-rel").Release(ctx, 3)
	assert.ErrorIs(t, err, redcoord.ErrNotReplicated)
	assert.NotErrorIs(t, err, redcoord.ErrNotHeld)
	assert.ErrorContains(t, err, "the release stands")
	n, err := sem.Available(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(3), n, "the release stands")

	xsem := rsemaphore.NewExpirable(plain, "none-xrel")
	require.NoError(t, xsem.SetPermits(ctx, 1))
	p, err := xsem.Acquire(ctx, rsemaphore.AcquireOptions{Lease: time.Minute})
	require.NoError(t, err)
	err = rsemaphore.NewExpirable(c, "none-xrel").Release(ctx, p)
	assert.ErrorIs(t, err, redcoord.ErrNotReplicated)
	assert.NotErrorIs(t, err, redcoord.ErrNotHeld)
	n, err = xsem.Acquired(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "the release stands")
}

// miniredis has no replicas and answers WAIT with 0 at once: every acquire
// fails with ErrNotReplicated, saying so, and leaves nothing behind.
func TestWaitReplicasMiniredis(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Mini(t)
	rdb := srv.Client(t)
	c := locktest.NewClient(t, rdb, redcoord.WithWaitReplicas(1, time.Second))
	for _, s := range subjects(t, c, "mini-") {
		before := snapshot(t, rdb)
		err := s.acquire(ctx)
		assert.ErrorIs(t, err, redcoord.ErrNotReplicated, s.kind)
		assert.ErrorIs(t, err, redcoord.ErrNotAcquired, s.kind)
		assert.ErrorContains(t, err, "0 of 1 replicas acknowledged within 1s", s.kind)
		assert.Equal(t, before, snapshot(t, rdb), s.kind)
	}
}
