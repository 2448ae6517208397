package locktest

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
)

// ScopedInFlight checks that a hold's Context ends when its last Unlock is
// sent, not when the reply comes: Redis may give the name to another as
// soon as the release arrives, and the reply may come late, or never. In a
// bubble of InBubble, the reply of every script named in release is held
// for a second (after a first Lock and Unlock of each handle, which loads
// the scripts); mk makes the handle under test (in the bubble's t), and other, when not nil,
// a handle of another process that takes the name (the first one released)
// while the reply is held.
func ScopedInFlight(t *testing.T, release []string,
	mk func(t *testing.T, ps []*Proc) redcoord.Locker, other func(ps []*Proc) redcoord.Locker) {
	t.Helper()
	InBubble(t, 2, func(t *testing.T, mr *miniredis.Miniredis, ps []*Proc) {
		ctx := context.Background()
		x := mk(t, ps)
		require.NoError(t, x.Lock(ctx)) // a first cycle loads the scripts
		require.NoError(t, x.Unlock(ctx))
		if other != nil {
			y := other(ps)
			require.NoError(t, y.Lock(ctx))
			require.NoError(t, y.Unlock(ctx))
		}
		require.NoError(t, x.Lock(ctx))
		c, cancel := x.Context(ctx)
		defer cancel()
		for _, name := range release {
			for _, p := range ps {
				p.Faults.DelayReply(EvalSHA(name), time.Second)
			}
		}
		done := make(chan error, 1)
		go func() { done <- x.Unlock(ctx) }()
		time.Sleep(100 * time.Millisecond) // the release has reached Redis
		synctest.Wait()
		t.Logf("keys %v", mr.Keys())
		require.Error(t, c.Err(), "the Context is live while the last Unlock is in flight")
		assert.ErrorIs(t, context.Cause(c), redcoord.ErrNotHeld)
		c2, cancel2 := x.Context(ctx)
		require.Error(t, c2.Err(), "a Context taken while the last Unlock is in flight is live")
		cancel2()
		if other != nil {
			y := other(ps)
			tctx, tcancel := context.WithTimeout(ctx, 500*time.Millisecond)
			require.NoError(t, y.Lock(tctx), "another process takes the name while the reply is held")
			tcancel()
			require.NoError(t, y.Unlock(ctx))
		}
		require.NoError(t, <-done)
	})
}
