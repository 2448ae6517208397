package scripts

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/redistest"
)

// An unfair lock's waiter registry: a busy try registers its request's
// Client, by its id, once however many of its waiters try (a TryLock
// registers nothing), a release to zero wakes one registered Client on its
// channel ("1": its longest-waiting waiter) and drops it, a take by a
// registered Client's last waiter and its last waiter's leave unregister
// it, and a forced unlock wakes every registered client once.
func TestWaiterRegistry(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang guard
		defer cancel()
		ps := rdb.Subscribe(ctx, "t:{n}:ch:cb", "t:{n}:ch:cc", "t:{n}:ch")
		defer func() { _ = ps.Close() }()
		for range 3 {
			_, err := ps.Receive(ctx) // the confirmations
			require.NoError(t, err)
		}
		next := func() string {
			t.Helper()
			msg, err := ps.ReceiveMessage(ctx)
			require.NoError(t, err)
			return msg.Channel + " " + msg.Payload
		}
		lease := NewLeaseArg(time.Minute, nil)
		a, b, c := testLock("ca:1"), testLock("cb:1"), testLock("cc:1")
		waiters := func() []string { return rdb.ZRange(ctx, a.Waiters, 0, -1).Val() }

		got, err := a.Acquire(ctx, rdb, "ca:1:1", TokenArg(0), lease, Register)
		require.NoError(t, err)
		require.True(t, got.OK)
		assert.Empty(t, waiters(), "a free lock registers nobody")
		got, err = b.Acquire(ctx, rdb, "cb:1:1", TokenArg(0), lease, NoRegistry)
		require.NoError(t, err)
		require.False(t, got.OK)
		assert.Empty(t, waiters(), "a TryLock registers nothing")
		_, err = b.Acquire(ctx, rdb, "cb:1:2", TokenArg(0), lease, Register)
		require.NoError(t, err)
		_, err = c.Acquire(ctx, rdb, "cc:1:1", TokenArg(0), lease, Register)
		require.NoError(t, err)
		assert.Equal(t, []string{"cb", "cc"}, waiters())

		n, _, err := a.Release(ctx, rdb, "ca:1:2", false, TokenArg(believed(t, ctx, rdb, a)))
		require.NoError(t, err)
		require.Zero(t, n)
		assert.Equal(t, "t:{n}:ch:cb 1", next(), "the first registered, on its client's channel")
		assert.Equal(t, []string{"cc"}, waiters(), "the woken Client leaves the registry")

		got, err = c.Acquire(ctx, rdb, "cc:1:1", TokenArg(0), lease, Register)
		require.NoError(t, err)
		require.True(t, got.OK)
		assert.Empty(t, waiters(), "a registered Client whose last waiter takes the lock leaves")

		_, err = b.Acquire(ctx, rdb, "cb:1:2", TokenArg(0), lease, Register)
		require.NoError(t, err)
		_, err = a.Acquire(ctx, rdb, "ca:1:3", TokenArg(0), lease, Register)
		require.NoError(t, err)
		_, _, err = a.Leave(ctx, rdb, "ca:1:3", false)
		require.NoError(t, err)
		assert.Equal(t, []string{"cb"}, waiters(), "a leave unregisters")

		_, err = b.Acquire(ctx, rdb, "cb:1:3", TokenArg(0), lease, Register) // a second waiter of client cb
		require.NoError(t, err)
		forced, err := a.Force(ctx, rdb, "", fenceNow(t, ctx, rdb, a.Fence), forceReq())
		require.NoError(t, err)
		require.Equal(t, ForceDone, forced)
		assert.Equal(t, "t:{n}:ch:cb *", next(), "each client once")
		assert.Equal(t, []string{"cb"}, waiters(), "a forced unlock keeps the registrations, one per Client")

		n, _, err = a.Release(ctx, rdb, "ca:1:4", false, TokenArg(believed(t, ctx, rdb, a)))
		require.NoError(t, err)
		assert.Equal(t, int64(-1), n)
		require.NoError(t, ps.Ping(ctx))
		assert.Equal(t, "pong", func() string {
			msg, err := ps.Receive(ctx)
			require.NoError(t, err)
			pong, _ := msg.(*redis.Pong)
			if pong == nil {
				return ""
			}
			return "pong"
		}(), "a release of nothing wakes nobody, and nothing went to the name's channel")
	})
}

// A registration past its deadline (its process stopped its heartbeat) is
// skipped and dropped by a release.
func TestWaiterRegistryDead(t *testing.T) {
	srv := redistest.Real(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	a := testLock("ca:1")
	short := testLock("cb:1").Prepared(20 * time.Millisecond)
	got, err := a.Acquire(ctx, rdb, "ca:1:1", TokenArg(0), NewLeaseArg(time.Minute, nil), NoRegistry)
	require.NoError(t, err)
	require.True(t, got.OK)
	_, err = short.Acquire(ctx, rdb, "cb:1:1", TokenArg(0), NewLeaseArg(time.Minute, nil), Register)
	require.NoError(t, err)
	time.Sleep(50 * time.Millisecond) // past the registration's deadline
	ps := rdb.Subscribe(ctx, "t:{n}:ch:cb")
	defer func() { _ = ps.Close() }()
	_, err = ps.Receive(ctx)
	require.NoError(t, err)
	_, _, err = a.Release(ctx, rdb, "ca:1:2", false, TokenArg(believed(t, ctx, rdb, a)))
	require.NoError(t, err)
	assert.Zero(t, rdb.Exists(ctx, a.Waiters).Val(), "the dead registration is dropped")
	select {
	case msg := <-ps.Channel():
		t.Fatalf("a dead registration was woken: %v", msg)
	default:
	}
}

// A waiter registry of the wrong type is refused before the first write.
func TestWaiterRegistryWrongType(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		a, b := testLock("ca:1"), testLock("cb:1")
		got, err := a.Acquire(ctx, rdb, "ca:1:1", TokenArg(0), NewLeaseArg(time.Minute, nil), NoRegistry)
		require.NoError(t, err)
		require.True(t, got.OK)
		require.NoError(t, rdb.Set(ctx, a.Waiters, "x", 0).Err())
		before := dump(t, rdb)
		_, err = b.Acquire(ctx, rdb, "cb:1:1", TokenArg(0), NewLeaseArg(time.Minute, nil), Register)
		assert.ErrorIs(t, err, errs.ErrWrongType, "a busy try that registers")
		_, _, err = a.Release(ctx, rdb, "ca:1:2", false, TokenArg(believed(t, ctx, rdb, a)))
		assert.ErrorIs(t, err, errs.ErrWrongType, "a release to zero")
		_, _, err = a.Leave(ctx, rdb, "ca:1:1", false)
		assert.ErrorIs(t, err, errs.ErrWrongType, "a leave")
		_, err = a.Force(ctx, rdb, "", fenceNow(t, ctx, rdb, a.Fence), forceReq())
		assert.ErrorIs(t, err, errs.ErrWrongType, "a forced unlock")
		assert.Equal(t, before, dump(t, rdb), "keys changed")
	})
}

// A registered request's acquire that fails on a fence of the wrong type
// leaves the registry as it was: its type is read, and its entry removed
// only after the checks.
func TestWaiterRegistryKeptOnError(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		a := testLock("ca:1")
		require.NoError(t, rdb.ZAdd(ctx, a.Waiters, redis.Z{Score: float64(time.Now().Add(time.Hour).UnixMilli()), Member: "ca:1:1"}).Err())
		require.NoError(t, rdb.Set(ctx, a.Fence, "x", 0).Err())
		before := dump(t, rdb)
		_, err := a.Acquire(ctx, rdb, "ca:1:1", TokenArg(0), NewLeaseArg(time.Minute, nil), Register)
		assert.ErrorIs(t, err, errs.ErrWrongType)
		assert.Equal(t, before, dump(t, rdb), "keys changed")
	})
}

// A request that takes the lock with Register takes its Client out of the
// registry: a copy of a registering try sent again after its reply was
// lost, a retry of one applied already, a re-entry. With Keep (other
// local waiters remain) it registers its Client again, and with
// NoRegistry (a TryLock) it leaves the registry be. Unregister drops a
// registration while the lock is busy.
func TestWaiterRegistryHolderLeaves(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		lease := NewLeaseArg(time.Minute, nil)
		a, b, c := testLock("ca:1"), testLock("cb:1"), testLock("cc:1")
		waiters := func() []string { return rdb.ZRange(ctx, a.Waiters, 0, -1).Val() }
		take := func(l Lock, req string, held uint64, reg Registry) Acquired {
			t.Helper()
			got, err := l.Acquire(ctx, rdb, req, TokenArg(held), lease, reg)
			require.NoError(t, err)
			return got
		}
		enroll := func(client string) { // as a try of the client did, its reply lost
			t.Helper()
			deadline := float64(time.Now().Add(time.Hour).UnixMilli())
			require.NoError(t, rdb.ZAdd(ctx, a.Waiters, redis.Z{Score: deadline, Member: client}).Err())
		}

		require.True(t, take(a, "ca:1:1", 0, NoRegistry).OK)
		require.False(t, take(b, "cb:1:1", 0, Register).OK)
		require.False(t, take(c, "cc:1:1", 0, Register).OK)
		forced, err := a.Force(ctx, rdb, "", fenceNow(t, ctx, rdb, a.Fence), forceReq()) // frees the lock, keeps the registrations
		require.NoError(t, err)
		require.Equal(t, ForceDone, forced)
		assert.Equal(t, []string{"cb", "cc"}, waiters())

		got := take(b, "cb:1:1", 0, Register) // the copy sent again, the lock now free
		require.True(t, got.OK)
		assert.Equal(t, []string{"cc"}, waiters(), "a copy that takes the lock leaves")
		enroll("cb")
		require.True(t, take(b, "cb:1:1", 0, Register).OK, "a retry of it, applied already")
		assert.Equal(t, []string{"cc"}, waiters(), "an applied request's retry leaves")
		enroll("cb")
		require.True(t, take(b, "cb:1:2", got.Token, Register).OK)
		assert.Equal(t, []string{"cc"}, waiters(), "a re-entry leaves")
		enroll("cb")
		require.True(t, take(b, "cb:1:3", got.Token, NoRegistry).OK)
		assert.ElementsMatch(t, []string{"cb", "cc"}, waiters(), "a TryLock leaves the registry be")
		require.NoError(t, rdb.ZRem(ctx, a.Waiters, "cb").Err()) // a release woke b's Client
		require.True(t, take(b, "cb:1:4", got.Token, Keep).OK)
		assert.ElementsMatch(t, []string{"cc", "cb"}, waiters(), "Keep registers the Client again")

		require.False(t, take(c, "cc:1:1", 0, Unregister).OK)
		assert.Equal(t, []string{"cb"}, waiters(), "Unregister drops the registration of a busy try")
		require.False(t, take(c, "cc:1:1", 0, Unregister).OK)
		assert.Equal(t, []string{"cb"}, waiters(), "and registers nothing")
	})
}

// A late copy of a request that gave up (it reaches Redis after its
// leave) is refused, and registers nothing.
func TestWaiterRegistryLateCopy(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		a, b := testLock("ca:1"), testLock("cb:1")
		got, err := a.Acquire(ctx, rdb, "ca:1:1", TokenArg(0), NewLeaseArg(time.Minute, nil), NoRegistry)
		require.NoError(t, err)
		require.True(t, got.OK)
		_, _, err = b.Leave(ctx, rdb, "cb:1:1", false)
		require.NoError(t, err)
		got, err = b.Acquire(ctx, rdb, "cb:1:1", TokenArg(0), NewLeaseArg(time.Minute, nil), Register)
		require.NoError(t, err)
		assert.False(t, got.OK)
		assert.Empty(t, rdb.ZRange(ctx, a.Waiters, 0, -1).Val(), "the late copy registered")
	})
}

// A woken Client whose last waiter gives up (its leave finds the Client no
// longer registered, the lock free) passes the wake on to the next
// registered Client; a leave that keeps the registration (other local
// waiters remain) neither drops it nor passes a wake on.
func TestWaiterRegistryWokenLeaverPassesOn(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang guard
		defer cancel()
		ps := rdb.Subscribe(ctx, "t:{n}:ch:cb", "t:{n}:ch:cc")
		defer func() { _ = ps.Close() }()
		for range 2 {
			_, err := ps.Receive(ctx)
			require.NoError(t, err)
		}
		lease := NewLeaseArg(time.Minute, nil)
		a, b, c := testLock("ca:1"), testLock("cb:1"), testLock("cc:1")
		_, err := a.Acquire(ctx, rdb, "ca:1:1", TokenArg(0), lease, NoRegistry)
		require.NoError(t, err)
		_, err = b.Acquire(ctx, rdb, "cb:1:1", TokenArg(0), lease, Register)
		require.NoError(t, err)
		time.Sleep(5 * time.Millisecond) // c's deadline comes after b's
		_, err = c.Acquire(ctx, rdb, "cc:1:1", TokenArg(0), lease, Register)
		require.NoError(t, err)
		_, _, err = a.Release(ctx, rdb, "ca:1:2", false, TokenArg(believed(t, ctx, rdb, a)))
		require.NoError(t, err)
		msg, err := ps.ReceiveMessage(ctx)
		require.NoError(t, err)
		assert.Equal(t, "t:{n}:ch:cb", msg.Channel, "b first")
		_, _, err = c.Leave(ctx, rdb, "cc:1:2", true) // another waiter of c gives up
		require.NoError(t, err)
		assert.Equal(t, []string{"cc"}, rdb.ZRange(ctx, a.Waiters, 0, -1).Val(), "c stays registered")
		_, _, err = b.Leave(ctx, rdb, "cb:1:1", false) // b gives up without trying
		require.NoError(t, err)
		msg, err = ps.ReceiveMessage(ctx)
		require.NoError(t, err)
		assert.Equal(t, "t:{n}:ch:cc 1", msg.Channel+" "+msg.Payload, "the wake passed on to c")
	})
}
