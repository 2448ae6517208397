package redcoord_test

import (
	"context"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/relection"
	"github.com/redcoord/redcoord/rfairlock"
	"github.com/redcoord/redcoord/rlatch"
	"github.com/redcoord/redcoord/rlock"
	"github.com/redcoord/redcoord/rrwlock"
	"github.com/redcoord/redcoord/rsemaphore"
)

// Every error class a user can provoke (a bad argument, a key of another
// type, a closed Client, a release of nothing, a cancelled context), for
// every primitive kind, starts with exactly one "redcoord: ", names no
// internal script, and matches its sentinels.
func TestErrorMessages(t *testing.T) {
	locktest.InBubble(t, 2, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		c, closed := ps[0].C, ps[1].C
		require.NoError(t, closed.Close(ctx))
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		for _, key := range []string{"rc:{wt}:lock", "rc:{wt}:permits", "rc:{wt}:latch"} {
			require.NoError(t, mr.Set(key, "oops"))
		}

		type tc struct {
			name string
			err  error
			is   []error
		}
		var cases []tc
		add := func(name string, err error, is ...error) { cases = append(cases, tc{name, err, is}) }

		// rlock
		add("rlock bad lease", rlock.New(c, "x").LockWithLease(ctx, -1), redcoord.ErrInvalidArgument)
		add("rlock bad name", rlock.New(c, "").Lock(ctx), redcoord.ErrInvalidArgument)
		add("rlock wrong type", rlock.New(c, "wt").Lock(ctx), redcoord.ErrWrongType)
		add("rlock closed", rlock.New(closed, "x").Lock(ctx), redcoord.ErrClosed, redcoord.ErrNotAcquired)
		add("rlock not held", rlock.New(c, "x").Unlock(ctx), redcoord.ErrNotHeld)
		add("rlock cancelled", rlock.New(c, "x").Lock(cancelled), context.Canceled, redcoord.ErrNotAcquired)
		// rfairlock
		add("rfairlock bad lease", rfairlock.New(c, "x").LockWithLease(ctx, -1), redcoord.ErrInvalidArgument)
		add("rfairlock wrong type", rfairlock.New(c, "wt").Lock(ctx), redcoord.ErrWrongType)
		add("rfairlock closed", rfairlock.New(closed, "x").Lock(ctx), redcoord.ErrClosed, redcoord.ErrNotAcquired)
		add("rfairlock not held", rfairlock.New(c, "x").Unlock(ctx), redcoord.ErrNotHeld)
		add("rfairlock cancelled", rfairlock.New(c, "x").Lock(cancelled), context.Canceled, redcoord.ErrNotAcquired)
		// rrwlock
		add("rrwlock bad lease", rrwlock.New(c, "x").RLockWithLease(ctx, -1), redcoord.ErrInvalidArgument)
		add("rrwlock wrong type", rrwlock.New(c, "wt").Lock(ctx), redcoord.ErrWrongType)
		add("rrwlock closed", rrwlock.New(closed, "x").RLock(ctx), redcoord.ErrClosed, redcoord.ErrNotAcquired)
		add("rrwlock not held", rrwlock.New(c, "x").RUnlock(ctx), redcoord.ErrNotHeld)
		add("rrwlock cancelled", rrwlock.New(c, "x").Lock(cancelled), context.Canceled, redcoord.ErrNotAcquired)
		// rsemaphore
		add("rsemaphore bad n", rsemaphore.New(c, "s").Acquire(ctx, 0), redcoord.ErrInvalidArgument)
		add("rsemaphore wrong type", rsemaphore.New(c, "wt").Acquire(ctx, 1), redcoord.ErrWrongType)
		add("rsemaphore closed", rsemaphore.New(closed, "s").Acquire(ctx, 1), redcoord.ErrClosed, redcoord.ErrNotAcquired)
		add("rsemaphore not set", rsemaphore.New(c, "s").Acquire(ctx, 1), redcoord.ErrNotSet, redcoord.ErrNotAcquired)
		add("rsemaphore cancelled", rsemaphore.New(c, "s").Acquire(cancelled, 1), context.Canceled, redcoord.ErrNotAcquired)
		x := rsemaphore.NewExpirable(c, "xs")
		_, err := x.TrySetPermits(ctx, 1)
		require.NoError(t, err)
		p, err := x.Acquire(ctx, rsemaphore.AcquireOptions{})
		require.NoError(t, err)
		require.NoError(t, x.Release(ctx, p))
		add("expirable not held", x.Release(ctx, p), redcoord.ErrNotHeld)
		// rlatch
		_, err = rlatch.New(c, "l").TrySetCount(ctx, 0)
		add("rlatch bad count", err, redcoord.ErrInvalidArgument)
		add("rlatch wrong type", rlatch.New(c, "wt").CountDown(ctx), redcoord.ErrWrongType)
		add("rlatch closed", rlatch.New(closed, "l").Wait(ctx), redcoord.ErrClosed)
		add("rlatch not set", rlatch.New(c, "l").Wait(ctx), redcoord.ErrNotSet)
		add("rlatch cancelled", rlatch.New(c, "l").Wait(cancelled), context.Canceled)
		// relection
		add("relection bad name", relection.New(c, "{").Campaign(ctx, "v"), redcoord.ErrInvalidArgument)
		add("relection wrong type", relection.New(c, "wt").Campaign(ctx, "v"), redcoord.ErrWrongType)
		add("relection closed", relection.New(closed, "e").Campaign(ctx, "v"), redcoord.ErrClosed, redcoord.ErrNotAcquired)
		add("relection not led", relection.New(c, "e").Resign(ctx), redcoord.ErrNotHeld)
		add("relection cancelled", relection.New(c, "e").Campaign(cancelled, "v"), context.Canceled)

		scripts := []string{"lock_", "fair_", "rw_", "sem_", "latch_", "elect_", "relection:", "script"}
		for _, c := range cases {
			if !assert.Error(t, c.err, c.name) {
				continue
			}
			msg := c.err.Error()
			assert.True(t, strings.HasPrefix(msg, "redcoord: "), "%s: %q", c.name, msg)
			assert.Equal(t, 1, strings.Count(msg, "redcoord:"), "%s: %q", c.name, msg)
			for _, s := range scripts {
				assert.NotContains(t, msg, s, "%s names a script", c.name)
			}
			for _, target := range c.is {
				assert.ErrorIs(t, c.err, target, c.name)
			}
			t.Logf("%-22s %s", c.name, msg)
		}
	})
}
