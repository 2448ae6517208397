package rfairlock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rfairlock"
)

// go-redis re-sends a command whose reply was lost with its connection, though
// Redis ran it. Lost replies on acquire, re-entry, release, and on the try
// that queues a waiter: every request is applied exactly once.
func TestRetriedRequestsApplyOnce(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		faults := redistest.NewFaults()
		retrying := func(o *redis.Options) {
			o.Dialer = faults.Dialer(nil)
			o.MinRetryBackoff, o.MaxRetryBackoff = time.Millisecond, 2*time.Millisecond
		}
		ctx := context.Background()
		m := rfairlock.New(locktest.NewClient(t, srv.Client(t, retrying)), "retry")
		other := rfairlock.New(locktest.NewClient(t, srv.Client(t)), "retry")
		count := func(m *rfairlock.Mutex) int64 {
			n, err := m.HoldCount(ctx)
			require.NoError(t, err)
			return n
		}
		const rounds = 100 // 5 injected faults each
		for i := 0; i < rounds; i++ {
			faults.DropReply(locktest.EvalSHA("fair_acquire"))
			require.NoError(t, m.Lock(ctx), "fresh acquire, round %d", i)
			require.Equal(t, int64(1), count(m), "fresh acquire applied twice, round %d", i)

			held, cancel := m.Context(ctx)
			faults.DropReply(locktest.EvalSHA("fair_acquire"))
			require.NoError(t, m.Lock(held))
			cancel()
			require.Equal(t, int64(2), count(m), "re-entry applied twice, round %d", i)

			faults.DropReply(locktest.EvalSHA("fair_release"))
			require.NoError(t, m.Unlock(ctx))
			require.Equal(t, int64(1), count(m), "release applied twice, round %d", i)

			faults.DropReply(locktest.EvalSHA("fair_release"))
			require.NoError(t, m.Unlock(ctx), "a retried final release must not report ErrNotHeld, round %d", i)
			require.Equal(t, int64(0), count(m))

			// m queues behind other; the reply of the try that queues it is lost.
			require.NoError(t, other.Lock(ctx))
			faults.DropReply(locktest.EvalSHA("fair_acquire"))
			done := make(chan error, 1)
			go func() { done <- m.Lock(ctx) }()
			locktest.Eventually(t, func() bool { p, _ := m.Position(ctx); return p == 1 }, "m queued")
			n, err := other.QueueLength(ctx)
			require.NoError(t, err)
			require.Equal(t, 1, n, "queued twice, round %d", i)
			require.NoError(t, other.Unlock(ctx))
			require.NoError(t, <-done)
			require.Equal(t, int64(1), count(m), "the grant counted twice, round %d", i)
			require.NoError(t, m.Unlock(ctx))
		}
		assert.Equal(t, 5*rounds, faults.Fired(), "every injected fault fired")
		assert.Equal(t, []string{"rc:{retry}:fence"}, locktest.Keys(t, srv.Client(t)))
	})
}

// A final release whose reply is lost hands the lock to a waiter, which
// takes and releases it during go-redis's retry backoff: the retry still
// reports success, not ErrLeaseLost.
func TestRetriedReleaseAfterTheNextHolderReleased(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		faults := redistest.NewFaults()
		rdb := srv.Client(t, func(o *redis.Options) {
			o.Dialer = faults.Dialer(nil)
			o.MinRetryBackoff, o.MaxRetryBackoff = 200*time.Millisecond, 200*time.Millisecond
		})
		ctx := context.Background()
		a := rfairlock.New(locktest.NewClient(t, rdb), "r")
		b := rfairlock.New(locktest.NewClient(t, srv.Client(t)), "r")
		require.NoError(t, a.Lock(ctx))
		bDone := make(chan error, 1)
		go func() {
			if err := b.Lock(ctx); err != nil {
				bDone <- err
				return
			}
			bDone <- b.Unlock(ctx) // within a's retry backoff
		}()
		locktest.Eventually(t, func() bool { p, _ := b.Position(ctx); return p == 1 }, "b queued")
		isRelease, owner := locktest.EvalSHA("fair_release"), a.Owner()
		// EVALSHA sha numkeys keys... kind publish channel marker-lifetime owner ...
		faults.DropReply(func(args []string) bool {
			n, _ := strconv.Atoi(args[2])
			return isRelease(args) && len(args) > 3+n+4 && args[3+n+4] == owner
		})
		require.NoError(t, a.Unlock(ctx), "the release was applied; its retry must say so")
		require.NoError(t, <-bDone)
		assert.Equal(t, 1, faults.Fired())
	})
}
