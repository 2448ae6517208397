package rlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rlock"
)

// While an Extend of a hold the watchdog renews is on its way, the hold
// stays valid until its current lease may end in Redis: RedLock's Validity
// neither drops to zero nor counts the new lease before its reply.
func TestRedLockValidityDuringExtend(t *testing.T) {
	locktest.InBubble(t, 1, func(t *testing.T, _ *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		rl := rlock.NewRedLock([]*redcoord.Client{ps[0].C}, "v")
		require.NoError(t, rl.Lock(ctx))
		held := rl.Validity()
		require.Greater(t, held, 20*time.Second, "about the lease TTL")

		ps[0].Faults.DelayReply(locktest.EvalSHA("lock_extend"), time.Second)
		extended := make(chan error, 1)
		go func() { extended <- rl.Extend(ctx, time.Hour) }()
		synctest.Wait()
		require.Equal(t, 1, ps[0].Faults.Delayed(), "the Extend's reply is held back")
		assert.Equal(t, held, rl.Validity(), "valid until the lease it had may end")

		require.NoError(t, <-extended)
		assert.Greater(t, rl.Validity(), 50*time.Minute, "the new lease, once confirmed")
		require.NoError(t, rl.Unlock(ctx))
	})
}
