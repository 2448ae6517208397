package rrwlock_test

import (
	"testing"

	"github.com/alicebob/miniredis/v2"

	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rrwlock"
)

// Extend and TryLockWithLease on the write side, RExtend and
// TryRLockWithLease on the read side: locktest.Extends.
func TestExtend(t *testing.T) {
	locktest.InBubble(t, 1, func(t *testing.T, _ *miniredis.Miniredis, ps []*locktest.Proc) {
		locktest.Extends(t, rrwlock.New(ps[0].C, "w"))
	})
	locktest.InBubble(t, 1, func(t *testing.T, _ *miniredis.Miniredis, ps []*locktest.Proc) {
		locktest.Extends(t, newReader(rrwlock.New(ps[0].C, "r")))
	})
}
