package rlock_test

import (
	"context"
	"testing"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rlock"
)

var kind = locktest.Kind{
	New:     func(c *redcoord.Client, name string) locktest.Reentrant { return rlock.New(c, name) },
	Acquire: "lock_acquire", Release: "lock_release", Leave: "lock_leave", Extend: "lock_extend",
	Count: locktest.LockCount,
	Force: func(ctx context.Context, c *redcoord.Client, name string) (bool, error) {
		return rlock.New(c, name).ForceUnlock(ctx)
	},
}

func TestFaultFailedUnlock(t *testing.T)     { locktest.FailedUnlock(t, kind) }
func TestFaultUnknownExtend(t *testing.T)    { locktest.UnknownExtend(t, kind) }
func TestFaultOrphanedAcquire(t *testing.T)  { locktest.OrphanedAcquire(t, kind) }
func TestFaultOrphanedReentry(t *testing.T)  { locktest.OrphanedReentry(t, kind) }
func TestFaultLateAcquire(t *testing.T)      { locktest.LateAcquire(t, kind) }
func TestFaultLossOneMeaning(t *testing.T)   { locktest.LossOneMeaning(t, kind) }
func TestFaultLateReply(t *testing.T)        { locktest.LateReply(t, kind) }
func TestFaultSharedHandle(t *testing.T)     { locktest.SharedHandle(t, kind) }
func TestFaultTurnBounded(t *testing.T)      { locktest.TurnBounded(t, kind) }
func TestFaultReentryAfterLoss(t *testing.T) { locktest.ReentryAfterLoss(t, kind) }
func TestFaultClosedEnds(t *testing.T)       { locktest.ClosedEnds(t, kind) }
func TestFaultDoneRelease(t *testing.T)      { locktest.DoneRelease(t, kind) }
func TestFaultForcedNotice(t *testing.T)     { locktest.ForcedNotice(t, kind) }

func TestFaultRetriedForce(t *testing.T) { locktest.RetriedForce(t, kind, "lock_force") }
