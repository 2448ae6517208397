package rlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
)

// go-redis re-sends a command whose reply was lost with its connection, though
// Redis ran it. 1,000 such lost replies on acquire, re-entry and release:
// every request is applied exactly once.
func TestRetriedRequestsApplyOnce(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		faults := redistest.NewFaults()
		rdb := srv.Client(t, func(o *redis.Options) {
			o.Dialer = faults.Dialer(nil)
			o.MinRetryBackoff, o.MaxRetryBackoff = time.Millisecond, 2*time.Millisecond
		})
		ctx := context.Background()
		m := rlock.New(locktest.NewClient(t, rdb), "retry")
		count := func() int64 {
			n, err := m.HoldCount(ctx)
			require.NoError(t, err)
			return n
		}
		require.NoError(t, m.Lock(ctx)) // load the scripts: every fault then hits an applied script
		require.Greater(t, m.Token(), uint64(0))
		require.NoError(t, m.Unlock(ctx))
		// A fence ahead of the server's clock hands out last + 1 (see
		// next_token): every token handed out, retried or not, is counted.
		const base = uint64(1) << 52
		require.NoError(t, rdb.HSet(ctx, "rc:{retry}:fence", "n", base).Err())
		const rounds = 250 // 4 injected faults each
		for i := 0; i < rounds; i++ {
			faults.DropReply(locktest.EvalSHA("lock_acquire"))
			require.NoError(t, m.Lock(ctx), "fresh acquire, round %d", i)
			require.Equal(t, int64(1), count(), "fresh acquire applied twice, round %d", i)
			token := m.Token()
			require.Equal(t, base+uint64(i)+1, token, "one token per fresh hold: the retry handed out none, round %d", i)

			held, cancel := m.Context(ctx)
			faults.DropReply(locktest.EvalSHA("lock_acquire"))
			require.NoError(t, m.Lock(held))
			cancel()
			require.Equal(t, int64(2), count(), "re-entry applied twice, round %d", i)
			require.Equal(t, token, m.Token(), "re-entry keeps the token, round %d", i)

			faults.DropReply(locktest.EvalSHA("lock_release"))
			require.NoError(t, m.Unlock(ctx))
			require.Equal(t, int64(1), count(), "release applied twice, round %d", i)

			faults.DropReply(locktest.EvalSHA("lock_release"))
			require.NoError(t, m.Unlock(ctx), "a retried final release must not report ErrNotHeld, round %d", i)
			require.Equal(t, int64(0), count())
		}
		assert.Equal(t, 4*rounds, faults.Fired(), "every injected fault fired")
		assert.Equal(t, base+rounds, mustFence(t, rdb, "retry"), "one token per fresh hold")
	})
}

func mustFence(t *testing.T, rdb *redis.Client, name string) uint64 {
	t.Helper()
	n, err := rdb.HGet(context.Background(), "rc:{"+name+"}:fence", "n").Uint64()
	require.NoError(t, err)
	return n
}

// With go-redis's retries off, a blocking Lock sends a try whose reply was
// lost again itself (see "Outages" in package redcoord): the same request,
// applied once, fresh or a re-entry. A TryLock's lost reply is its error.
func TestLockRetriesLostReplyOnce(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		faults := redistest.NewFaults()
		rdb := srv.Client(t, func(o *redis.Options) {
			o.Dialer = faults.Dialer(nil)
			o.MaxRetries = -1
		})
		ctx := context.Background()
		m := rlock.New(locktest.NewClient(t, rdb), "retry")
		require.NoError(t, m.Lock(ctx)) // load the scripts: every fault then hits an applied script
		require.NoError(t, m.Unlock(ctx))
		for i := range 5 {
			faults.DropReply(locktest.EvalSHA("lock_acquire"))
			require.NoError(t, m.Lock(ctx), "round %d", i)
			token := m.Token()
			held, cancel := m.Context(ctx)
			faults.DropReply(locktest.EvalSHA("lock_acquire"))
			require.NoError(t, m.Lock(held), "round %d", i)
			cancel()
			n, err := m.HoldCount(ctx)
			require.NoError(t, err)
			require.Equal(t, int64(2), n, "each Lock applied once, round %d", i)
			require.Equal(t, token, m.Token())
			require.NoError(t, m.Unlock(ctx))
			require.NoError(t, m.Unlock(ctx))
			require.Zero(t, lockKeys(t, rdb), "free, round %d", i)
		}
		assert.Equal(t, 10, faults.Fired())

		faults.DropReply(locktest.EvalSHA("lock_acquire"))
		ok, err := m.TryLock(ctx)
		assert.False(t, ok)
		assert.Error(t, err, "a TryLock whose reply was lost fails")
		assert.NoError(t, m.Lock(ctx), "the failed TryLock left nothing behind")
		assert.NoError(t, m.Unlock(ctx))
		assert.Zero(t, lockKeys(t, rdb))
	})
}

// lockKeys returns 1 while the lock "retry" is held, 0 when it is free.
func lockKeys(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	n, err := rdb.Exists(context.Background(), "rc:{retry}:lock").Result()
	require.NoError(t, err)
	return n
}
