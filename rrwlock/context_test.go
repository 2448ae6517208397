package rrwlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rrwlock"
)

// readSide is an RWMutex's read side as locktest.Scoped and
// locktest.Extends see a lock.
type readSide struct{ *rrwlock.RWMutex }

func (r readSide) Lock(ctx context.Context) error   { return r.RLock(ctx) }
func (r readSide) Unlock(ctx context.Context) error { return r.RUnlock(ctx) }
func (r readSide) Context(parent context.Context) (context.Context, context.CancelFunc) {
	return r.RContext(parent)
}
func (r readSide) TryLockWithLease(ctx context.Context, lease time.Duration) (bool, error) {
	return r.TryRLockWithLease(ctx, lease)
}
func (r readSide) Extend(ctx context.Context, lease time.Duration) error {
	return r.RExtend(ctx, lease)
}
func (r readSide) Lost() <-chan struct{} { return r.RLost() }

// Context ends with the write hold, RContext with the read hold:
// locktest.Scoped.
func TestContext(t *testing.T) {
	srv := redistest.Real(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	c := locktest.NewClient(t, rdb, redcoord.WithLeaseTTL(300*time.Millisecond))
	locktest.Scoped(t, rrwlock.New(c, "w"), `rrwlock "w": write lock`, func() {
		require.NoError(t, rdb.Del(ctx, "rc:{w}:lock").Err())
	})
	locktest.Scoped(t, readSide{rrwlock.New(c, "r")}, `rrwlock "r": read lock`, func() {
		require.NoError(t, rdb.Del(ctx, "rc:{r}:readers", "rc:{r}:leases").Err())
	})
}
