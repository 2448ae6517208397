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
	locktest.Scoped(t, rrwlock.New(c, "r").RLocker(), `rrwlock "r": read lock`, func() {
		require.NoError(t, rdb.Del(ctx, "rc:{r}:readers", "rc:{r}:leases").Err())
	})
}

// Context and RContext end when the last Unlock or RUnlock is sent:
// locktest.ScopedInFlight.
func TestContextEndsAsUnlockIsSent(t *testing.T) {
	t.Run("write", func(t *testing.T) {
		locktest.ScopedInFlight(t, []string{"rw_unlock"},
			func(t *testing.T, ps []*locktest.Proc) redcoord.Locker { return rrwlock.New(ps[0].C, "w") },
			func(ps []*locktest.Proc) redcoord.Locker { return rrwlock.New(ps[1].C, "w") })
	})
	t.Run("read", func(t *testing.T) {
		locktest.ScopedInFlight(t, []string{"rw_runlock"},
			func(t *testing.T, ps []*locktest.Proc) redcoord.Locker { return rrwlock.New(ps[0].C, "r").RLocker() },
			func(ps []*locktest.Proc) redcoord.Locker { return rrwlock.New(ps[1].C, "r") })
	})
}
