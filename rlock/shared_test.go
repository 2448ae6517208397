package rlock_test

import (
	"testing"
	"testing/synctest"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
)

// Goroutines sharing one handle exclude each other; the hold's Context
// re-enters (see "Sharing a handle" at redcoord.Locker).
func TestSharedHandle(t *testing.T) {
	t.Run("Mutex", func(t *testing.T) {
		locktest.Shared(t, locktest.OneServer(func(c *redcoord.Client, name string) redcoord.Locker {
			return rlock.New(c, name)
		}))
	})
	t.Run("MultiMutex", func(t *testing.T) {
		locktest.Shared(t, locktest.OneServer(func(c *redcoord.Client, name string) redcoord.Locker {
			return rlock.NewMulti(c, []string{name, name + ":b"})
		}))
	})
	t.Run("RedLock", func(t *testing.T) {
		locktest.Shared(t, func(t *testing.T, f func(t *testing.T, h redcoord.Locker, sent func() int64)) {
			synctest.Test(t, func(t *testing.T) {
				var cs []*redcoord.Client
				var ps []*locktest.Proc
				for range 3 {
					mr, opts := redistest.Bubble()
					defer mr.Close()
					p := locktest.NewProc(t, opts)
					defer p.Kill()
					ps = append(ps, p)
					cs = append(cs, p.C)
				}
				sent := func() (n int64) {
					for _, p := range ps {
						n += p.RT.Load()
					}
					return n
				}
				f(t, rlock.NewRedLock(cs, "shared"), sent)
			})
		})
	})
}
