package rlock_test

import (
	"testing"
	"testing/synctest"

	"github.com/alicebob/miniredis/v2"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
)

// Extend and TryLockWithLease on each kind of handle: locktest.Extends.
func TestExtend(t *testing.T) {
	t.Run("Mutex", func(t *testing.T) {
		locktest.InBubble(t, 1, func(t *testing.T, _ *miniredis.Miniredis, ps []*locktest.Proc) {
			locktest.Extends(t, rlock.New(ps[0].C, "m"))
		})
	})
	t.Run("MultiMutex", func(t *testing.T) {
		locktest.InBubble(t, 1, func(t *testing.T, _ *miniredis.Miniredis, ps []*locktest.Proc) {
			locktest.Extends(t, rlock.NewMulti(ps[0].C, []string{"a", "b"}))
		})
	})
	t.Run("RedLock", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			mr, opts := redistest.Bubble()
			defer mr.Close()
			var cs []*redcoord.Client
			for _, prefix := range []string{"s0", "s1", "s2"} { // three servers, as far as the lock can tell
				p := locktest.NewProc(t, opts, redcoord.WithPrefix(prefix))
				defer p.Kill()
				cs = append(cs, p.C)
			}
			locktest.Extends(t, rlock.NewRedLock(cs, "r"))
		})
	})
}
