package scripts

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/redistest"
)

func testLatch() Latch {
	return Latch{Latch: "t:{l}:latch", Done: "t:{l}:latch-done", Kind: "rlatch", Publish: "PUBLISH",
		Channel: "t:{l}:ch", Spent: time.Hour}
}

// A latch is set once until it reaches 0; each CountDown counts once, a
// retried one (the same request id) not again; the CountDown that reaches
// 0 publishes one '*' and gives the latch its spent TTL; a latch at 0 may
// be set again, which clears the TTL.
func TestLatchScripts(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		l := testLatch()
		sub := rdb.Subscribe(ctx, l.Channel)
		defer sub.Close()
		_, err := sub.Receive(ctx)
		require.NoError(t, err)

		_, err = l.State(ctx, rdb)
		assert.ErrorIs(t, err, errs.ErrNotSet)
		_, _, err = l.CountDown(ctx, rdb, "a:1")
		assert.ErrorIs(t, err, errs.ErrNotSet)
		assert.Zero(t, rdb.Exists(ctx, l.Latch, l.Done).Val(), "nothing written for a latch never set")

		set, _, err := l.TrySet(ctx, rdb, "s:1", 2)
		require.NoError(t, err)
		assert.True(t, set)
		set, _, err = l.TrySet(ctx, rdb, "s:1", 2)
		require.NoError(t, err)
		assert.True(t, set, "a retried TrySetCount that set the count reports it did")
		msgs := receiveAll(t, rdb, sub, l.Channel)
		require.Len(t, msgs, 1, "the set wakes the waits for it; its retry does not")
		assert.Equal(t, "@open set", msgs[0].Payload)
		set, count, err := l.TrySet(ctx, rdb, "s:2", 5)
		require.NoError(t, err)
		assert.False(t, set, "a counting latch is not set again")
		assert.Equal(t, int64(2), count)
		assert.Equal(t, time.Duration(-1), rdb.PTTL(ctx, l.Latch).Val(), "a counting latch has no TTL")

		left, counted, err := l.CountDown(ctx, rdb, "a:1")
		require.NoError(t, err)
		assert.True(t, counted)
		assert.Equal(t, int64(1), left)
		left, counted, err = l.CountDown(ctx, rdb, "a:1")
		require.NoError(t, err)
		assert.True(t, counted)
		assert.Equal(t, int64(1), left, "a retried CountDown counts once")
		assert.Empty(t, receiveAll(t, rdb, sub, l.Channel), "nothing published above 0")

		left, counted, err = l.CountDown(ctx, rdb, "b:1")
		require.NoError(t, err)
		assert.True(t, counted)
		assert.Zero(t, left)
		msgs = receiveAll(t, rdb, sub, l.Channel)
		require.Len(t, msgs, 1, "the CountDown that opens the latch wakes every waiter once")
		opened, err := l.State(ctx, rdb)
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("@open %d", opened.Round), msgs[0].Payload, "with the round that opened")
		ttl := rdb.PTTL(ctx, l.Latch).Val()
		assert.Greater(t, ttl, 59*time.Minute, "a spent latch expires")
		assert.LessOrEqual(t, ttl, time.Hour)

		left, counted, err = l.CountDown(ctx, rdb, "c:1")
		require.NoError(t, err)
		assert.False(t, counted, "a latch at 0 counts no further")
		assert.Zero(t, left)
		assert.Empty(t, receiveAll(t, rdb, sub, l.Channel))
		first, err := l.State(ctx, rdb)
		require.NoError(t, err)
		assert.Zero(t, first.Count)
		assert.Positive(t, first.Round)
		assert.Equal(t, first.Round, first.Born)

		set, _, err = l.TrySet(ctx, rdb, "s:3", 1)
		require.NoError(t, err)
		assert.True(t, set, "a spent latch is set again")
		msgs = receiveAll(t, rdb, sub, l.Channel)
		require.Len(t, msgs, 1, "a set wakes the waits for it")
		assert.Equal(t, "@open set", msgs[0].Payload)
		assert.Equal(t, time.Duration(-1), rdb.PTTL(ctx, l.Latch).Val(), "and counts without a TTL")
		assert.Positive(t, rdb.PTTL(ctx, l.Done).Val(), "the markers expire")
		second, err := l.State(ctx, rdb)
		require.NoError(t, err)
		assert.Greater(t, second.Round, first.Round, "a new round")
		assert.Equal(t, first.Born, second.Born, "in the same hash")

		existed, err := l.Delete(ctx, rdb)
		require.NoError(t, err)
		assert.True(t, existed)
		msgs = receiveAll(t, rdb, sub, l.Channel)
		require.Len(t, msgs, 1, "waiters of a deleted latch are woken to find it gone")
		_, err = l.State(ctx, rdb)
		assert.ErrorIs(t, err, errs.ErrNotSet, "a deleted latch")
		assert.Positive(t, rdb.PTTL(ctx, l.Latch).Val(), "its tombstone expires")
		assert.Equal(t, int64(1), rdb.Exists(ctx, l.Done).Val(), "the markers outlive a Delete")
		left, counted, err = l.CountDown(ctx, rdb, "b:1")
		require.NoError(t, err)
		assert.True(t, counted, "a CountDown retried across the Delete is recognised")
		assert.Zero(t, left)
		existed, err = l.Delete(ctx, rdb)
		require.NoError(t, err)
		assert.False(t, existed)

		set, _, err = l.TrySet(ctx, rdb, "s:4", 1)
		require.NoError(t, err)
		assert.True(t, set)
		third, err := l.State(ctx, rdb)
		require.NoError(t, err)
		assert.Greater(t, third.Round, second.Round, "rounds increase across a Delete")
		assert.Equal(t, third.Round, third.Born, "a new hash")
	})
}

// A key of another type, or a hash another primitive wrote, is refused with
// ErrWrongType before any write.
func TestLatchWrongType(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		l := testLatch()
		for name, setup := range map[string]func(){
			"string at latch": func() { rdb.Set(ctx, l.Latch, "x", 0) },
			"foreign hash":    func() { rdb.HSet(ctx, l.Latch, "field", "x") },
			"another kind":    func() { rdb.HSet(ctx, l.Latch, "k", "rlock", "c", 1) },
			"string at done":  func() { rdb.HSet(ctx, l.Latch, "k", "rlatch", "c", 1); rdb.Set(ctx, l.Done, "x", 0) },
		} {
			require.NoError(t, rdb.FlushAll(ctx).Err())
			setup()
			before := dump(t, rdb)
			_, _, err := l.TrySet(ctx, rdb, "s:1", 1)
			assert.ErrorIs(t, err, errs.ErrWrongType, "set: %s", name)
			_, _, err = l.CountDown(ctx, rdb, "a:1")
			assert.ErrorIs(t, err, errs.ErrWrongType, "count down: %s", name)
			_, err = l.State(ctx, rdb)
			assert.ErrorIs(t, err, errs.ErrWrongType, "count: %s", name)
			_, err = l.Delete(ctx, rdb)
			assert.ErrorIs(t, err, errs.ErrWrongType, "delete: %s", name)
			assert.Equal(t, before, dump(t, rdb), "keys changed: %s", name)
		}
	})
}
