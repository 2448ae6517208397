package scripts

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
)

// waitingIDs returns the request ids of a fair queue's waiting hash, and
// fails the test if a request's time of joining ("@<request id>") is left
// without its request.
func waitingIDs(t *testing.T, ctx context.Context, rdb *redis.Client, key string) []string {
	t.Helper()
	fields, err := rdb.HKeys(ctx, key).Result()
	require.NoError(t, err)
	var ids []string
	joined := map[string]bool{}
	for _, f := range fields {
		if req, ok := strings.CutPrefix(f, "@"); ok {
			joined[req] = true
		} else {
			ids = append(ids, f)
		}
	}
	for _, id := range ids {
		delete(joined, id)
	}
	assert.Empty(t, joined, "times of joining left without their requests in %s", key)
	return ids
}

// joinedAt returns the time of joining the waiting hash key keeps for req,
// in server ms (0: none).
func joinedAt(t *testing.T, ctx context.Context, rdb *redis.Client, key, req string) int64 {
	t.Helper()
	v, err := rdb.HGet(ctx, key, "@"+req).Result()
	if err == redis.Nil {
		return 0
	}
	require.NoError(t, err)
	ms, err := strconv.ParseInt(v, 10, 64)
	require.NoError(t, err, "a time of joining in ms: %q", v)
	return ms
}

// queueStart returns a context bounding the test, a client of srv emptied
// and the server's time.
func queueStart(t *testing.T, srv *redistest.Server) (context.Context, *redis.Client, time.Time) {
	t.Helper()
	rdb := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	require.NoError(t, rdb.FlushAll(ctx).Err())
	server, err := rdb.Time(ctx).Result()
	require.NoError(t, err)
	return ctx, rdb, server
}

// semTaken sets the test's Semaphore to n permits, all taken by "a:1".
func semTaken(t *testing.T, ctx context.Context, rdb *redis.Client, n int64) Sem {
	t.Helper()
	s := testSem()
	_, err := s.Set(ctx, rdb, "set:1", SetTotal, n)
	require.NoError(t, err)
	_, err = s.Acquire(ctx, rdb, "a:1", n, SemQueue, time.Minute)
	require.NoError(t, err)
	return s
}

// A request that joins a fair queue (the fair lock's, the Semaphore's)
// is stored with when it joined, in server time, beside what a grant to it
// needs, which reads as before.
func TestQueueJoined(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx, rdb, server := queueStart(t, srv)

		a, b := testFair("a"), testFair("b")
		_, err := a.Acquire(ctx, rdb, "a:1", TokenArg(0), NewLeaseArg(time.Minute, []byte("ma")), true, time.Minute)
		require.NoError(t, err)
		got, err := b.Acquire(ctx, rdb, "b:1", TokenArg(0), NewLeaseArg(5*time.Second, []byte("m e t a")), true, time.Minute)
		require.NoError(t, err)
		require.False(t, got.OK)
		assert.Equal(t, "5000 m e t a", rdb.HGet(ctx, b.waiting(), "b:1").Val())
		joined := joinedAt(t, ctx, rdb, b.waiting(), "b:1")
		assert.Equal(t, got.Now, joined, "joined when the acquire ran")
		assert.InDelta(t, server.UnixMilli(), joined, 1000, "in server ms")
		_, err = b.Acquire(ctx, rdb, "b:1", TokenArg(0), NewLeaseArg(5*time.Second, []byte("m e t a")), true, time.Minute)
		require.NoError(t, err)
		assert.Equal(t, joined, joinedAt(t, ctx, rdb, b.waiting(), "b:1"), "a retry keeps its place and its time")
		_, err = b.Leave(ctx, rdb, "b:1")
		require.NoError(t, err)
		assert.Zero(t, rdb.Exists(ctx, b.queue(), b.alive(), b.waiting()).Val(), "leaving leaves no field behind")

		s := semTaken(t, ctx, rdb, 2)
		_, err = s.Acquire(ctx, rdb, "b:1", 2, SemQueue, time.Minute)
		require.NoError(t, err)
		assert.Equal(t, "2", rdb.HGet(ctx, s.Waiting, "b:1").Val())
		assert.InDelta(t, server.UnixMilli(), joinedAt(t, ctx, rdb, s.Waiting, "b:1"), 1000, "in server ms")
		_, err = s.Release(ctx, rdb, "a:2", 2, "")
		require.NoError(t, err)
		assert.Zero(t, rdb.Exists(ctx, s.Queue, s.Alive, s.Waiting).Val(), "a grant leaves no field behind")
	})
}

// A request queued without its time of joining, as a version that kept
// none queued it, is granted as before: with its lease and metadata
// (spaces and all), or its permits; a request queued after it with its
// time is granted next.
func TestQueueWithoutJoined(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx, rdb, server := queueStart(t, srv)
		deadline := float64(server.Add(time.Minute).UnixMilli())

		a, b, c := testFair("a"), testFair("b"), testFair("c")
		first, err := a.Acquire(ctx, rdb, "a:1", TokenArg(0), NewLeaseArg(time.Minute, []byte("ma")), true, time.Minute)
		require.NoError(t, err)
		require.NoError(t, rdb.RPush(ctx, b.queue(), "b:1").Err())
		require.NoError(t, rdb.ZAdd(ctx, b.alive(), redis.Z{Score: deadline, Member: "b:1"}).Err())
		require.NoError(t, rdb.HSet(ctx, b.waiting(), "b:1", "5000 m e t a").Err())
		_, err = c.Acquire(ctx, rdb, "c:1", TokenArg(0), NewLeaseArg(7*time.Second, []byte("mc")), true, time.Minute)
		require.NoError(t, err)

		_, err = a.Release(ctx, rdb, "a:2", false, TokenArg(first.Token))
		require.NoError(t, err)
		st, err := b.State(ctx, rdb)
		require.NoError(t, err)
		assert.Equal(t, "b", st.Owner, "the request without a time is granted")
		assert.Equal(t, []byte("m e t a"), st.Meta, "with its metadata")
		assert.Greater(t, st.Remaining, 3*time.Second, "and its lease")
		assert.LessOrEqual(t, st.Remaining, 5*time.Second)

		_, err = b.Release(ctx, rdb, "b:2", false, TokenArg(st.Token))
		require.NoError(t, err)
		st, err = c.State(ctx, rdb)
		require.NoError(t, err)
		assert.Equal(t, "c", st.Owner, "the request with a time is granted next")
		assert.Equal(t, []byte("mc"), st.Meta)
		assert.Greater(t, st.Remaining, 5*time.Second)
		assert.LessOrEqual(t, st.Remaining, 7*time.Second)
		assert.Zero(t, rdb.Exists(ctx, c.queue(), c.alive(), c.waiting()).Val(), "the queue is empty")

		s := semTaken(t, ctx, rdb, 3)
		require.NoError(t, rdb.RPush(ctx, s.Queue, "b:1").Err())
		require.NoError(t, rdb.ZAdd(ctx, s.Alive, redis.Z{Score: deadline, Member: "b:1"}).Err())
		require.NoError(t, rdb.HSet(ctx, s.Waiting, "b:1", "2").Err())
		_, err = s.Acquire(ctx, rdb, "c:1", 1, SemQueue, time.Minute)
		require.NoError(t, err)
		r, err := s.Release(ctx, rdb, "a:2", 3, "")
		require.NoError(t, err)
		assert.Equal(t, int64(0), r.Available, "both granted: 2 and 1 of 3")
		for _, w := range []struct {
			req string
			n   int64
		}{{"b:1", 2}, {"c:1", 1}} {
			got, err := s.Acquire(ctx, rdb, w.req, w.n, SemQueue, time.Minute)
			require.NoError(t, err)
			assert.True(t, got.OK, "%s was granted", w.req)
		}
		assert.Zero(t, rdb.Exists(ctx, s.Queue, s.Alive, s.Waiting).Val(), "the queue is empty")
	})
}
