package rrwlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rrwlock"
)

// readExtends is an RWMutex's read side as locktest.Extends sees a lock.
type readExtends struct{ readSide }

func (r readExtends) TryLockWithLease(ctx context.Context, lease time.Duration) (bool, error) {
	return r.TryRLockWithLease(ctx, lease)
}
func (r readExtends) Extend(ctx context.Context, lease time.Duration) error {
	return r.RExtend(ctx, lease)
}
func (r readExtends) Lost() <-chan struct{} { return r.RLost() }

// Extend and TryLockWithLease on the write side, RExtend and
// TryRLockWithLease on the read side: locktest.Extends.
func TestExtend(t *testing.T) {
	locktest.InBubble(t, 1, func(t *testing.T, _ *miniredis.Miniredis, ps []*locktest.Proc) {
		locktest.Extends(t, rrwlock.New(ps[0].C, "w"))
		locktest.Extends(t, readExtends{readSide{rrwlock.New(ps[0].C, "r")}})
	})
}
