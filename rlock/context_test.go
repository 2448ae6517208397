package rlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
)

// Each handle's Context ends with its hold: locktest.Scoped.
func TestContext(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		c := locktest.NewClient(t, rdb, redcoord.WithLeaseTTL(300*time.Millisecond))
		del := func(keys ...string) func() {
			return func() { require.NoError(t, rdb.Del(ctx, keys...).Err()) }
		}
		t.Run("Mutex", func(t *testing.T) {
			locktest.Scoped(t, rlock.New(c, "m"), `rlock "m"`, del("rc:{m}:lock"))
		})
		t.Run("MultiMutex", func(t *testing.T) {
			locktest.Scoped(t, rlock.NewMulti(c, []string{"x", "y"}), `rlock.MultiMutex ["x" "y"]`, del("rc:{y}:lock"))
		})
		t.Run("RedLock", func(t *testing.T) {
			c2 := locktest.NewClient(t, rdb, redcoord.WithLeaseTTL(300*time.Millisecond), redcoord.WithPrefix("rd"))
			locktest.Scoped(t, rlock.NewRedLock([]*redcoord.Client{c, c2}, "r"), `rlock.RedLock "r"`, del("rc:{r}:lock"))
		})
	})
}

// Each handle's Context ends when its last Unlock is sent:
// locktest.ScopedInFlight.
func TestContextEndsAsUnlockIsSent(t *testing.T) {
	rel := []string{"lock_release"}
	t.Run("Mutex", func(t *testing.T) {
		locktest.ScopedInFlight(t, rel,
			func(t *testing.T, ps []*locktest.Proc) redcoord.Locker { return rlock.New(ps[0].C, "m") },
			func(ps []*locktest.Proc) redcoord.Locker { return rlock.New(ps[1].C, "m") })
	})
	t.Run("MultiMutex", func(t *testing.T) {
		locktest.ScopedInFlight(t, rel,
			func(t *testing.T, ps []*locktest.Proc) redcoord.Locker {
				return rlock.NewMulti(ps[0].C, []string{"x", "y"})
			},
			func(ps []*locktest.Proc) redcoord.Locker { return rlock.New(ps[1].C, "x") })
	})
	t.Run("RedLock", func(t *testing.T) {
		locktest.ScopedInFlight(t, rel,
			func(t *testing.T, ps []*locktest.Proc) redcoord.Locker {
				c2 := locktest.NewClient(t, ps[0].RDB, redcoord.WithPrefix("rd"))
				return rlock.NewRedLock([]*redcoord.Client{ps[0].C, c2}, "r")
			}, nil)
	})
}
