package redcoord_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/relection"
	"github.com/redcoord/redcoord/rfairlock"
	"github.com/redcoord/redcoord/rlatch"
	"github.com/redcoord/redcoord/rlock"
	"github.com/redcoord/redcoord/rratelimit"
	"github.com/redcoord/redcoord/rrwlock"
	"github.com/redcoord/redcoord/rsemaphore"
)

// Every error class a user can provoke (a bad argument, a key of another
// type, a closed Client, a release of nothing, a cancelled context), for
// every primitive kind, starts with exactly one "redcoord: ", names the
// primitive's kind and quoted name, names no internal script, and matches
// its sentinels.
func TestErrorMessages(t *testing.T) {
	locktest.InBubble(t, 2, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		c, closed := ps[0].C, ps[1].C
		require.NoError(t, closed.Close(ctx))
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		for _, key := range []string{"rc:{wt}:lock", "rc:{wt}:permits", "rc:{wt}:latch", "rc:{wt}:rate"} {
			require.NoError(t, mr.Set(key, "oops"))
		}

		type tc struct {
			name string
			tag  string // the primitive's kind and quoted name
			err  error
			is   []error
			has  []string // more the message must say
		}
		var cases []tc
		add := func(name, tag string, err error, is ...error) { cases = append(cases, tc{name, tag, err, is, nil}) }
		// has adds to the last case what its message must say.
		has := func(s ...string) { cases[len(cases)-1].has = append(cases[len(cases)-1].has, s...) }
		wrongKey := func(part string) { has("key rc:{wt}:" + part + " holds a string") }

		// rlock
		add("rlock bad lease", `rlock "x"`, rlock.New(c, "x").LockWithLease(ctx, -1), redcoord.ErrInvalidArgument)
		has("invalid argument: rlock \"x\": lease: must be at least 1ms")
		add("rlock bad name", `rlock ""`, rlock.New(c, "").Lock(ctx), redcoord.ErrInvalidArgument)
		badCtx, cancelBad := rlock.New(c, "").Context(ctx)
		defer cancelBad()
		add("rlock bad name context", `rlock ""`, context.Cause(badCtx), redcoord.ErrNotHeld)
		has("not held: rlock \"\": not held by this handle")
		add("rlock wrong type", `rlock "wt"`, rlock.New(c, "wt").Lock(ctx), redcoord.ErrWrongType)
		wrongKey("lock")
		add("rlock closed", `rlock "x"`, rlock.New(closed, "x").Lock(ctx), redcoord.ErrClosed, redcoord.ErrNotAcquired)
		has("not acquired: rlock \"x\": client closed")
		add("rlock not held", `rlock "x"`, rlock.New(c, "x").Unlock(ctx), redcoord.ErrNotHeld)
		has("not held: rlock \"x\": not held by this handle")
		add("rlock extend not held", `rlock "x"`, rlock.New(c, "x").Extend(ctx, time.Second), redcoord.ErrNotHeld)
		add("rlock cancelled", `rlock "x"`, rlock.New(c, "x").Lock(cancelled), context.Canceled, redcoord.ErrNotAcquired)
		has("not acquired: rlock \"x\": context canceled")
		// rlock.MultiMutex
		add("multi bad input", `rlock.MultiMutex ["a" "a"]`, rlock.NewMulti(c, []string{"a", "a"}).Lock(ctx), redcoord.ErrInvalidArgument)
		add("multi bad name", `rlock.MultiMutex ["a" ""]`, rlock.NewMulti(c, []string{"a", ""}).Lock(ctx), redcoord.ErrInvalidArgument)
		has("names[1]: must not be empty")
		add("multi wrong type", `rlock.MultiMutex ["m" "wt"]`, rlock.NewMulti(c, []string{"m", "wt"}).Lock(ctx), redcoord.ErrWrongType)
		wrongKey("lock")
		add("multi closed", `rlock.MultiMutex ["m"]`, rlock.NewMulti(closed, []string{"m"}).Lock(ctx), redcoord.ErrClosed, redcoord.ErrNotAcquired)
		add("multi not held", `rlock.MultiMutex ["m" "n"]`, rlock.NewMulti(c, []string{"m", "n"}).Unlock(ctx), redcoord.ErrNotHeld)
		add("multi extend not held", `rlock.MultiMutex ["m"]`, rlock.NewMulti(c, []string{"m"}).Extend(ctx, time.Second), redcoord.ErrNotHeld)
		add("multi cancelled", `rlock.MultiMutex ["m"]`, rlock.NewMulti(c, []string{"m"}).Lock(cancelled), context.Canceled, redcoord.ErrNotAcquired)
		// rlock.RedLock
		add("redlock bad input", `rlock.RedLock "r"`, rlock.NewRedLock([]*redcoord.Client{c, c}, "r").Lock(ctx), redcoord.ErrInvalidArgument)
		add("redlock bad lease", `rlock.RedLock "r"`, rlock.NewRedLock([]*redcoord.Client{c}, "r").LockWithLease(ctx, 0), redcoord.ErrInvalidArgument)
		add("redlock wrong type", `rlock.RedLock "wt"`, rlock.NewRedLock([]*redcoord.Client{c}, "wt").Lock(ctx), redcoord.ErrWrongType, redcoord.ErrNotAcquired)
		wrongKey("lock")
		add("redlock closed", `rlock.RedLock "r"`, rlock.NewRedLock([]*redcoord.Client{closed}, "r").Lock(ctx), redcoord.ErrClosed, redcoord.ErrNotAcquired)
		add("redlock not held", `rlock.RedLock "r"`, rlock.NewRedLock([]*redcoord.Client{c}, "r").Unlock(ctx), redcoord.ErrNotHeld)
		add("redlock cancelled", `rlock.RedLock "r"`, rlock.NewRedLock([]*redcoord.Client{c}, "r").Lock(cancelled), context.Canceled, redcoord.ErrNotAcquired)
		// rfairlock
		add("rfairlock bad lease", `rfairlock "x"`, rfairlock.New(c, "x").LockWithLease(ctx, -1), redcoord.ErrInvalidArgument)
		add("rfairlock wrong type", `rfairlock "wt"`, rfairlock.New(c, "wt").Lock(ctx), redcoord.ErrWrongType)
		wrongKey("lock")
		add("rfairlock closed", `rfairlock "x"`, rfairlock.New(closed, "x").Lock(ctx), redcoord.ErrClosed, redcoord.ErrNotAcquired)
		add("rfairlock not held", `rfairlock "x"`, rfairlock.New(c, "x").Unlock(ctx), redcoord.ErrNotHeld)
		add("rfairlock cancelled", `rfairlock "x"`, rfairlock.New(c, "x").Lock(cancelled), context.Canceled, redcoord.ErrNotAcquired)
		has("not acquired: rfairlock \"x\": context canceled")
		// rrwlock, both sides
		add("rrwlock bad lease", `rrwlock "x"`, rrwlock.New(c, "x").LockWithLease(ctx, -1), redcoord.ErrInvalidArgument)
		add("rrwlock read bad lease", `rrwlock "x"`, rrwlock.New(c, "x").RLockWithLease(ctx, -1), redcoord.ErrInvalidArgument)
		add("rrwlock wrong type", `rrwlock "wt"`, rrwlock.New(c, "wt").Lock(ctx), redcoord.ErrWrongType)
		wrongKey("lock")
		add("rrwlock read wrong type", `rrwlock "wt"`, rrwlock.New(c, "wt").RLock(ctx), redcoord.ErrWrongType)
		wrongKey("lock")
		add("rrwlock closed", `rrwlock "x"`, rrwlock.New(closed, "x").Lock(ctx), redcoord.ErrClosed, redcoord.ErrNotAcquired)
		add("rrwlock read closed", `rrwlock "x"`, rrwlock.New(closed, "x").RLock(ctx), redcoord.ErrClosed, redcoord.ErrNotAcquired)
		add("rrwlock not held", `rrwlock "x"`, rrwlock.New(c, "x").Unlock(ctx), redcoord.ErrNotHeld)
		add("rrwlock read not held", `rrwlock "x"`, rrwlock.New(c, "x").RUnlock(ctx), redcoord.ErrNotHeld)
		has("read lock: not held by this handle")
		add("rrwlock read extend", `rrwlock "x"`, rrwlock.New(c, "x").RExtend(ctx, time.Second), redcoord.ErrNotHeld)
		add("rrwlock cancelled", `rrwlock "x"`, rrwlock.New(c, "x").Lock(cancelled), context.Canceled, redcoord.ErrNotAcquired)
		add("rrwlock read cancelled", `rrwlock "x"`, rrwlock.New(c, "x").RLock(cancelled), context.Canceled, redcoord.ErrNotAcquired)
		rw := rrwlock.New(c, "up")
		require.NoError(t, rw.RLock(ctx))
		add("rrwlock upgrade", `rrwlock "up"`, rw.Lock(ctx), redcoord.ErrUpgrade, redcoord.ErrNotAcquired)
		require.NoError(t, rw.RUnlock(ctx))
		// rsemaphore
		add("rsemaphore bad n", `rsemaphore "s"`, rsemaphore.New(c, "s").Acquire(ctx, 0), redcoord.ErrInvalidArgument)
		add("rsemaphore wrong type", `rsemaphore "wt"`, rsemaphore.New(c, "wt").Acquire(ctx, 1), redcoord.ErrWrongType)
		wrongKey("permits")
		add("rsemaphore closed", `rsemaphore "s"`, rsemaphore.New(closed, "s").Acquire(ctx, 1), redcoord.ErrClosed, redcoord.ErrNotAcquired)
		add("rsemaphore not set", `rsemaphore "s"`, rsemaphore.New(c, "s").Acquire(ctx, 1), redcoord.ErrNotSet, redcoord.ErrNotAcquired)
		has("not acquired: rsemaphore \"s\": not set: its permits were never set")
		add("rsemaphore release unset", `rsemaphore "s"`, rsemaphore.New(c, "s").Release(ctx, 1), redcoord.ErrNotSet)
		add("rsemaphore cancelled", `rsemaphore "s"`, rsemaphore.New(c, "s").Acquire(cancelled, 1), context.Canceled, redcoord.ErrNotAcquired)
		// rsemaphore.ExpirableSemaphore
		x := rsemaphore.NewExpirable(c, "xs")
		_, err := x.TrySetPermits(ctx, 1)
		require.NoError(t, err)
		p, err := x.Acquire(ctx, rsemaphore.AcquireOptions{})
		require.NoError(t, err)
		require.NoError(t, x.Release(ctx, p))
		const xtag = `rsemaphore.ExpirableSemaphore "xs"`
		add("expirable not held", xtag, x.Release(ctx, p), redcoord.ErrNotHeld)
		add("expirable extend not held", xtag, x.Extend(ctx, p, time.Second), redcoord.ErrNotHeld)
		add("expirable zero permit", xtag, x.Release(ctx, rsemaphore.Permit{}), redcoord.ErrInvalidArgument)
		_, err = x.Acquire(ctx, rsemaphore.AcquireOptions{Lease: -1})
		add("expirable bad lease", xtag, err, redcoord.ErrInvalidArgument)
		_, err = rsemaphore.NewExpirable(c, "xs", rsemaphore.WithFair()).TrySetPermits(ctx, 1)
		add("expirable bad option", xtag, err, redcoord.ErrInvalidArgument)
		_, err = rsemaphore.NewExpirable(c, "wt").Acquire(ctx, rsemaphore.AcquireOptions{})
		add("expirable wrong type", `rsemaphore.ExpirableSemaphore "wt"`, err, redcoord.ErrWrongType)
		wrongKey("permits")
		add("expirable as semaphore", `rsemaphore "xs"`, rsemaphore.New(c, "xs").Acquire(ctx, 1), redcoord.ErrWrongType)
		has("key rc:{xs}:permits holds")
		_, err = rsemaphore.NewExpirable(closed, "xs").Acquire(ctx, rsemaphore.AcquireOptions{})
		add("expirable closed", xtag, err, redcoord.ErrClosed, redcoord.ErrNotAcquired)
		_, err = x.Acquire(cancelled, rsemaphore.AcquireOptions{})
		add("expirable cancelled", xtag, err, context.Canceled, redcoord.ErrNotAcquired)
		// rlatch
		_, err = rlatch.New(c, "l").TrySetCount(ctx, 0)
		add("rlatch bad count", `rlatch "l"`, err, redcoord.ErrInvalidArgument)
		add("rlatch wrong type", `rlatch "wt"`, rlatch.New(c, "wt").CountDown(ctx), redcoord.ErrWrongType)
		wrongKey("latch")
		_, err = rlatch.New(c, "wt").TrySetCount(ctx, 1)
		add("rlatch set wrong type", `rlatch "wt"`, err, redcoord.ErrWrongType)
		wrongKey("latch")
		_, err = rlatch.New(c, "wt").Count(ctx)
		add("rlatch count wrong type", `rlatch "wt"`, err, redcoord.ErrWrongType)
		add("rlatch closed", `rlatch "l"`, rlatch.New(closed, "l").Wait(ctx), redcoord.ErrClosed)
		add("rlatch not set", `rlatch "l"`, rlatch.New(c, "l").Wait(ctx), redcoord.ErrNotSet)
		add("rlatch countdown unset", `rlatch "l"`, rlatch.New(c, "l").CountDown(ctx), redcoord.ErrNotSet)
		add("rlatch cancelled", `rlatch "l"`, rlatch.New(c, "l").Wait(cancelled), context.Canceled)
		// relection
		add("relection bad name", `relection "{"`, relection.New(c, "{").Campaign(ctx, "v"), redcoord.ErrInvalidArgument)
		add("relection bad value", `relection "e"`, relection.New(c, "e").Campaign(ctx, ""), redcoord.ErrInvalidArgument)
		add("relection wrong type", `relection "wt"`, relection.New(c, "wt").Campaign(ctx, "v"), redcoord.ErrWrongType)
		wrongKey("lock")
		add("relection closed", `relection "e"`, relection.New(closed, "e").Campaign(ctx, "v"), redcoord.ErrClosed, redcoord.ErrNotAcquired)
		add("relection resign not led", `relection "e"`, relection.New(c, "e").Resign(ctx), redcoord.ErrNotHeld)
		has("not held: relection \"e\": not led by this handle")
		add("relection proclaim not led", `relection "e"`, relection.New(c, "e").Proclaim(ctx, "v"), redcoord.ErrNotHeld)
		has("not held: relection \"e\": not led by this handle")
		add("relection cancelled", `relection "e"`, relection.New(c, "e").Campaign(cancelled, "v"), context.Canceled, redcoord.ErrNotAcquired)
		// rratelimit
		add("rratelimit bad n", `rratelimit "r"`, rratelimit.New(c, "r", rratelimit.PerSecond(1)).WaitN(ctx, 0), redcoord.ErrInvalidArgument)
		add("rratelimit bad limit", `rratelimit "r"`, rratelimit.New(c, "r", rratelimit.PerSecond(0)).Wait(ctx), redcoord.ErrInvalidArgument)
		_, err = rratelimit.New(c, "wt", rratelimit.PerSecond(1)).Allow(ctx)
		add("rratelimit wrong type", `rratelimit "wt"`, err, redcoord.ErrWrongType)
		add("rratelimit closed", `rratelimit "r"`, rratelimit.New(closed, "r", rratelimit.PerSecond(1)).Wait(ctx), redcoord.ErrClosed)
		add("rratelimit cancelled", `rratelimit "r"`, rratelimit.New(c, "r", rratelimit.PerSecond(1)).Wait(cancelled), context.Canceled)

		// The words the messages named primitives by before they named
		// their kinds: `lock "x"`, `election "e"`.
		kindless := regexp.MustCompile(`\b(lock|election|redlock|semaphore|latch|permit \S+ of) "`)
		scripts := []string{"lock_", "fair_", "rw_", "sem_", "latch_", "elect_", "relection:", "rate_", "script"}
		for _, c := range cases {
			if !assert.Error(t, c.err, c.name) {
				continue
			}
			msg := c.err.Error()
			assert.True(t, strings.HasPrefix(msg, "redcoord: "), "%s: %q", c.name, msg)
			assert.Equal(t, 1, strings.Count(msg, "redcoord:"), "%s: %q", c.name, msg)
			assert.Contains(t, msg, c.tag, "%s names the primitive", c.name)
			for _, s := range c.has {
				assert.Contains(t, msg, s, c.name)
			}
			assert.NotRegexp(t, kindless, msg, "%s names the primitive by another word than its kind", c.name)
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
