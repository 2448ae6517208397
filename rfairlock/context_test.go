package rfairlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rfairlock"
)

// Context ends with the hold: locktest.Scoped.
func TestContext(t *testing.T) {
	srv := redistest.Real(t)
	rdb := srv.Client(t)
	c := locktest.NewClient(t, rdb, redcoord.WithLeaseTTL(300*time.Millisecond))
	locktest.Scoped(t, rfairlock.New(c, "f"), `rfairlock "f"`, func() {
		require.NoError(t, rdb.Del(context.Background(), "rc:{f}:lock").Err())
	})
}

// Context ends when the last Unlock is sent: locktest.ScopedInFlight.
func TestContextEndsAsUnlockIsSent(t *testing.T) {
	locktest.ScopedInFlight(t, []string{"fair_release"},
		func(t *testing.T, ps []*locktest.Proc) redcoord.Locker { return rfairlock.New(ps[0].C, "f") },
		func(ps []*locktest.Proc) redcoord.Locker { return rfairlock.New(ps[1].C, "f") })
}
