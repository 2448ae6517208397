package scripts

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/redistest"
)

func testElect(owner string) Fair {
	f := testFair(owner)
	f.Kind = "relection"
	return NewFair(f.Lock, "t:{n}:elect-queue", "t:{n}:elect-alive", "t:{n}:elect-waiting", "t:{n}:elect-log")
}

// An election and a fair lock of one name keep separate queues: a
// candidate that finds the name free (a fair lock's holder gone, its
// waiter queued) takes it for itself, and grants nothing to the fair
// lock's waiter, whose next try finds the name another kind's.
func TestElectQueueIsItsOwn(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		holder, waiter, cand := testFair("b"), testFair("c"), testElect("a")
		lease := NewLeaseArg(time.Minute, []byte("m"))
		r, err := holder.Acquire(ctx, rdb, "b:1", NoToken, lease, true, time.Minute)
		require.NoError(t, err)
		require.True(t, r.OK)
		r, err = waiter.Acquire(ctx, rdb, "c:1", NoToken, lease, true, time.Minute)
		require.NoError(t, err)
		require.False(t, r.OK)
		require.NoError(t, rdb.Del(ctx, holder.Lock.Hash).Err()) // its lease ran out

		r, err = cand.Acquire(ctx, rdb, "a:1", NoToken, NewLeaseArg(time.Minute, []byte("v")), true, time.Minute)
		require.NoError(t, err)
		assert.True(t, r.OK, "the candidate leads")
		assert.Equal(t, "a", rdb.HGet(ctx, cand.Lock.Hash, "o").Val())
		assert.Equal(t, []string{"c:1"}, rdb.LRange(ctx, waiter.queue(), 0, -1).Val(), "the fair lock's queue is untouched")
		_, err = waiter.Acquire(ctx, rdb, "c:1", NoToken, lease, true, time.Minute)
		assert.ErrorIs(t, err, errs.ErrWrongType)
	})
}

// A candidate that takes the lead logs a term; a new value logs once (a
// retried Proclaim does nothing more), a stale term's Proclaim nothing; a
// resign hands the lead to the next candidate, which logs its term; every
// change publishes one "*" on the name's channel and none on a client's.
func TestElectScripts(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		a, b := testElect("a"), testElect("b")
		sub := rdb.PSubscribe(ctx, "t:{n}:ch*")
		defer sub.Close()
		_, err := sub.Receive(ctx)
		require.NoError(t, err)

		none, err := a.Leader(ctx, rdb)
		require.NoError(t, err)
		assert.Equal(t, Term{ID: "0-0"}, none)

		got, err := a.Acquire(ctx, rdb, "a:1", NoToken, NewLeaseArg(time.Minute, []byte("host-a")), true, time.Minute)
		require.NoError(t, err)
		require.True(t, got.OK)
		_, err = b.Acquire(ctx, rdb, "b:1", NoToken, NewLeaseArg(time.Minute, []byte("host b")), true, time.Minute)
		require.NoError(t, err)

		lead, err := b.Leader(ctx, rdb)
		require.NoError(t, err)
		assert.Equal(t, got.Token, lead.Term)
		assert.Equal(t, "host-a", lead.Value)
		assert.Greater(t, lead.Remaining, 59*time.Second)
		assert.WithinDuration(t, time.Now(), lead.Since, time.Minute)

		ok, err := a.Proclaim(ctx, rdb, extendReq(), TokenArg(got.Token), "host-a2")
		require.NoError(t, err)
		assert.True(t, ok)
		ok, err = a.Proclaim(ctx, rdb, extendReq(), TokenArg(got.Token), "host-a2")
		require.NoError(t, err)
		assert.True(t, ok, "a retried Proclaim")
		ok, err = b.Proclaim(ctx, rdb, extendReq(), TokenArg(got.Token), "not me")
		require.NoError(t, err)
		assert.False(t, ok, "only the leader proclaims")
		ok, err = a.Proclaim(ctx, rdb, extendReq(), TokenArg(got.Token-1), "stale")
		require.NoError(t, err)
		assert.False(t, ok, "a term that ended proclaims nothing")

		n, err := a.Release(ctx, rdb, "a:2", true, TokenArg(got.Token))
		require.NoError(t, err)
		assert.Zero(t, n)
		next, err := b.Leader(ctx, rdb)
		require.NoError(t, err)
		assert.Greater(t, next.Term, got.Token, "the next candidate leads at once, in a later term")
		assert.Equal(t, "host b", next.Value, "with the value it campaigned with")

		log, err := a.Changes(ctx, rdb, "0-0", 10)
		require.NoError(t, err)
		require.Len(t, log, 3)
		assert.Equal(t, []uint64{got.Token, got.Token, next.Term}, []uint64{log[0].Term, log[1].Term, log[2].Term})
		assert.Equal(t, []string{"host-a", "host-a2", "host b"}, []string{log[0].Value, log[1].Value, log[2].Value})
		assert.Equal(t, log[0].Since, log[1].Since, "a proclaimed value keeps its term's start")
		assert.Equal(t, next.ID, log[2].ID, "Leader names the log's last entry")
		after, err := a.Changes(ctx, rdb, log[0].ID, 1)
		require.NoError(t, err)
		assert.Equal(t, log[1:2], after, "changes after an entry, at most n")
		after, err = a.Changes(ctx, rdb, log[2].ID, 10)
		require.NoError(t, err)
		assert.Empty(t, after)

		msgs := receiveAll(t, rdb, sub, "t:{n}:ch")
		var told []string
		for _, m := range msgs {
			if m.Payload == "*" {
				told = append(told, m.Channel)
			}
		}
		assert.Equal(t, []string{"t:{n}:ch", "t:{n}:ch", "t:{n}:ch"}, told, "one '*' per change, on the name's channel")
		assert.Greater(t, rdb.PTTL(ctx, a.Log()).Val(), 24*time.Hour, "the log expires a day after its last change")
	})
}

// The log keeps at least the latest LOG_KEEP (128) changes: Redis trims it
// by whole nodes of 100 entries (MAXLEN ~), miniredis exactly.
func TestElectLogIsCapped(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		a := testElect("a")
		got, err := a.Acquire(ctx, rdb, "a:1", NoToken, NewLeaseArg(time.Minute, []byte("v")), true, time.Minute)
		require.NoError(t, err)
		for i := range 200 {
			_, err := a.Proclaim(ctx, rdb, extendReq(), TokenArg(got.Token), string(rune('a'+i%26))+time.Duration(i).String())
			require.NoError(t, err)
		}
		n := rdb.XLen(ctx, a.Log()).Val()
		assert.GreaterOrEqual(t, n, int64(128))
		assert.LessOrEqual(t, n, int64(128+100))
		for range 300 {
			_, err := a.Proclaim(ctx, rdb, extendReq(), TokenArg(got.Token), time.Now().String())
			require.NoError(t, err)
		}
		n = rdb.XLen(ctx, a.Log()).Val()
		assert.GreaterOrEqual(t, n, int64(128))
		assert.LessOrEqual(t, n, int64(128+100), "trimmed as it grows")
	})
}

// A log or lock key of another type is refused before any write, as is a
// name that another primitive holds.
func TestElectWrongType(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		a := testElect("a")
		require.NoError(t, rdb.Set(ctx, a.Log(), "x", 0).Err())
		_, err := a.Acquire(ctx, rdb, "a:1", NoToken, NewLeaseArg(time.Minute, []byte("v")), true, time.Minute)
		assert.ErrorIs(t, err, errs.ErrWrongType)
		_, err = a.Leader(ctx, rdb)
		assert.ErrorIs(t, err, errs.ErrWrongType)
		_, err = a.Changes(ctx, rdb, "0-0", 1)
		assert.ErrorIs(t, err, errs.ErrWrongType)
		assert.Zero(t, rdb.Exists(ctx, a.Lock.Hash, a.Fence, a.queue(), a.alive(), a.waiting()).Val(), "nothing written")
		require.NoError(t, rdb.Del(ctx, a.Log()).Err())

		lock := testFair("b")
		_, err = lock.Acquire(ctx, rdb, "b:1", NoToken, NewLeaseArg(time.Minute, []byte("m")), true, time.Minute)
		require.NoError(t, err)
		_, err = a.Acquire(ctx, rdb, "a:1", NoToken, NewLeaseArg(time.Minute, []byte("v")), true, time.Minute)
		assert.ErrorIs(t, err, errs.ErrWrongType, "a name held by a fair lock")
		_, err = a.Leader(ctx, rdb)
		assert.ErrorIs(t, err, errs.ErrWrongType)
		assert.Zero(t, rdb.Exists(ctx, a.Log()).Val())
	})
}

// A lead that a script ends with no candidate to follow is logged as term
// 0 (nobody leads): a grant given back by a candidate that left before it
// saw it, a Resign, a forced end.
func TestElectVacancy(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		a, b := testElect("a"), testElect("b")
		lease := NewLeaseArg(time.Minute, []byte("v"))
		first, err := a.Acquire(ctx, rdb, "a:1", NoToken, lease, true, time.Minute)
		require.NoError(t, err)
		_, err = b.Acquire(ctx, rdb, "b:1", NoToken, lease, true, time.Minute)
		require.NoError(t, err)
		_, err = a.Release(ctx, rdb, "a:2", true, TokenArg(first.Token)) // granted to b:1
		require.NoError(t, err)
		_, err = b.Leave(ctx, rdb, "b:1") // b gave up before it saw the grant
		require.NoError(t, err)
		third, err := a.Acquire(ctx, rdb, "a:3", NoToken, lease, true, time.Minute)
		require.NoError(t, err)
		_, err = a.Release(ctx, rdb, "a:4", true, TokenArg(third.Token))
		require.NoError(t, err)
		_, err = a.Acquire(ctx, rdb, "a:5", NoToken, lease, true, time.Minute)
		require.NoError(t, err)
		_, err = b.Force(ctx, rdb, "", fenceNow(t, ctx, rdb, b.Fence), forceReq())
		require.NoError(t, err)

		log, err := a.Changes(ctx, rdb, "0-0", 10)
		require.NoError(t, err)
		var terms []bool
		for _, e := range log {
			terms = append(terms, e.Term != 0)
		}
		assert.Equal(t, []bool{true, true, false, true, false, true, false}, terms,
			"a, b, nobody (b left), a, nobody (resigned), a, nobody (forced)")

	})
}
