package rrwlock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rrwlock"
)

func force(ctx context.Context, c *redcoord.Client, name string) (bool, error) {
	return rrwlock.New(c, name).ForceUnlock(ctx)
}

var writer = locktest.Kind{
	New:     func(c *redcoord.Client, name string) locktest.Reentrant { return rrwlock.New(c, name) },
	Acquire: "rw_write", Release: "rw_unlock", Leave: "rw_leave", Extend: "lock_extend",
	Count: locktest.LockCount, Force: force,
}

// reader is an RWMutex's read side (RLocker) with what locktest's
// Reentrant and Extendable ask beyond redcoord.Locker.
type reader struct {
	redcoord.Locker
	m *rrwlock.RWMutex
}

func newReader(m *rrwlock.RWMutex) reader { return reader{m.RLocker(), m} }

func (r reader) LockWithLease(ctx context.Context, lease time.Duration) error {
	return r.m.RLockWithLease(ctx, lease)
}
func (r reader) TryLockWithLease(ctx context.Context, lease time.Duration) (bool, error) {
	return r.m.TryRLockWithLease(ctx, lease)
}
func (r reader) Extend(ctx context.Context, lease time.Duration) error {
	return r.m.RExtend(ctx, lease)
}
func (r reader) Token() uint64 { return r.m.RToken() }
func (r reader) Owner() string { return r.m.Owner() }

var readers = locktest.Kind{
	New:     func(c *redcoord.Client, name string) locktest.Reentrant { return newReader(rrwlock.New(c, name)) },
	Acquire: "rw_read", Release: "rw_runlock", Leave: "rw_leave", Extend: "rw_rextend", Shared: true,
	Count: func(m *miniredis.Miniredis, name, owner string) int64 {
		key := "rc:{" + name + "}:readers"
		if !m.Exists(key) {
			return 0
		}
		n, _ := strconv.ParseInt(m.HGet(key, owner), 10, 64)
		return n
	},
	Force: force,
}

func TestFaultFailedUnlock(t *testing.T) {
	t.Run("write", func(t *testing.T) { locktest.FailedUnlock(t, writer) })
	t.Run("read", func(t *testing.T) { locktest.FailedUnlock(t, readers) })
}

func TestFaultUnknownExtend(t *testing.T) {
	t.Run("write", func(t *testing.T) { locktest.UnknownExtend(t, writer) })
	t.Run("read", func(t *testing.T) { locktest.UnknownExtend(t, readers) })
}

func TestFaultOrphanedAcquire(t *testing.T) {
	t.Run("write", func(t *testing.T) { locktest.OrphanedAcquire(t, writer) })
	t.Run("read", func(t *testing.T) { locktest.OrphanedAcquire(t, readers) })
}

func TestFaultOrphanedReentry(t *testing.T) {
	t.Run("write", func(t *testing.T) { locktest.OrphanedReentry(t, writer) })
	t.Run("read", func(t *testing.T) { locktest.OrphanedReentry(t, readers) })
}

func TestFaultLateAcquire(t *testing.T) {
	t.Run("write", func(t *testing.T) { locktest.LateAcquire(t, writer) })
	t.Run("read", func(t *testing.T) { locktest.LateAcquire(t, readers) })
}

func TestFaultLossOneMeaning(t *testing.T) {
	t.Run("write", func(t *testing.T) { locktest.LossOneMeaning(t, writer) })
	t.Run("read", func(t *testing.T) { locktest.LossOneMeaning(t, readers) })
}

func TestFaultLateReply(t *testing.T) {
	t.Run("write", func(t *testing.T) { locktest.LateReply(t, writer) })
	t.Run("read", func(t *testing.T) { locktest.LateReply(t, readers) })
}

func TestFaultSharedHandle(t *testing.T) {
	t.Run("write", func(t *testing.T) { locktest.SharedHandle(t, writer) })
	t.Run("read", func(t *testing.T) { locktest.SharedHandle(t, readers) })
}

// A read re-entry after the fence key expired (a read hold kept for more
// than a day with no write) is a re-entry, not a new hold: RLost stays open
// and RToken keeps the version the hold was taken at.
func TestFaultReadReentryAfterFenceExpiry(t *testing.T) {
	locktest.FaultBubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, sf *locktest.ScriptFaults, c *redcoord.Client) {
		ctx := context.Background()
		x := rrwlock.New(c, "n")
		require.NoError(t, x.Lock(ctx))
		held, cancel := x.Context(ctx)
		defer cancel()
		require.NoError(t, x.RLock(held))
		require.NoError(t, x.Unlock(ctx))
		version := x.RToken()
		require.NotZero(t, version)
		m.Del("rc:{n}:fence")
		require.NoError(t, x.RLock(ctx))
		assert.False(t, locktest.IsClosed(x.RLost()))
		assert.Equal(t, version, x.RToken())
		require.NoError(t, x.RUnlock(ctx))
		require.NoError(t, x.RUnlock(ctx))
		assert.False(t, locktest.IsClosed(x.RLost()))
	})
}

func TestFaultClosedEnds(t *testing.T) {
	t.Run("write", func(t *testing.T) { locktest.ClosedEnds(t, writer) })
	t.Run("read", func(t *testing.T) { locktest.ClosedEnds(t, readers) })
}

func TestFaultDoneRelease(t *testing.T) {
	t.Run("write", func(t *testing.T) { locktest.DoneRelease(t, writer) })
	t.Run("read", func(t *testing.T) { locktest.DoneRelease(t, readers) })
}

func TestFaultTurnBounded(t *testing.T) {
	t.Run("write", func(t *testing.T) { locktest.TurnBounded(t, writer) })
	t.Run("read", func(t *testing.T) { locktest.TurnBounded(t, readers) })
}

func TestFaultReentryAfterLoss(t *testing.T) {
	t.Run("write", func(t *testing.T) { locktest.ReentryAfterLoss(t, writer) })
	t.Run("read", func(t *testing.T) { locktest.ReentryAfterLoss(t, readers) })
}

func TestFaultForcedNotice(t *testing.T) {
	t.Run("write", func(t *testing.T) { locktest.ForcedNotice(t, writer) })
	t.Run("read", func(t *testing.T) { locktest.ForcedNotice(t, readers) })
}

func TestFaultRetriedForce(t *testing.T) {
	t.Run("write", func(t *testing.T) { locktest.RetriedForce(t, writer, "rw_force") })
}
