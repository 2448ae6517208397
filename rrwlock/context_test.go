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
