package rrwlock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rrwlock"
)

// Bad input is ErrInvalidArgument naming the argument, from every method,
// and changes nothing in Redis.
func TestBadInput(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		rt := &redistest.RoundTrips{}
		rdb.AddHook(rt)
		c := locktest.NewClient(t, rdb)
		ctx := context.Background()
		cases := []struct {
			name string
			m    *rrwlock.RWMutex
			arg  string // what the message must name
		}{
			{"empty name", rrwlock.New(c, ""), "name"},
			{"long name", rrwlock.New(c, strings.Repeat("x", 513)), "name"},
			{"brace", rrwlock.New(c, "a{b}"), "name"},
			{"bad utf-8", rrwlock.New(c, "\xff"), "name"},
			{"nil client", rrwlock.New(nil, "n"), "nil *redcoord.Client"},
			{"nil option", rrwlock.New(c, "n", nil), "opts"},
			{"zero poll", rrwlock.New(c, "n", rrwlock.WithMaxPollInterval(0)), "WithMaxPollInterval"},
			{"negative poll", rrwlock.New(c, "n", rrwlock.WithMaxPollInterval(-time.Second)), "WithMaxPollInterval"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				for op, err := range everyMethod(ctx, tc.m) {
					assert.ErrorIs(t, err, redcoord.ErrInvalidArgument, op)
					assert.ErrorContains(t, err, tc.arg, op)
				}
			})
		}
		m := rrwlock.New(c, "n")
		for _, lease := range []time.Duration{0, -time.Second, time.Microsecond, time.Millisecond - 1} {
			for op, err := range map[string]error{"LockWithLease": m.LockWithLease(ctx, lease), "RLockWithLease": m.RLockWithLease(ctx, lease),
				"Extend": m.Extend(ctx, lease), "RExtend": m.RExtend(ctx, lease)} {
				assert.ErrorIs(t, err, redcoord.ErrInvalidArgument, "%s(%v)", op, lease)
				assert.ErrorContains(t, err, "lease", "%s(%v)", op, lease)
			}
		}
		assert.Zero(t, rt.Load(), "bad input does no I/O")
		assert.Empty(t, locktest.Keys(t, rdb), "bad input leaves Redis unchanged")
	})
}

// A done context (but for a release) and a closed Client are refused
// before any I/O; an acquire also says what did not happen
// (ErrNotAcquired).
func TestDoneContextAndClosedClient(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		rt := &redistest.RoundTrips{}
		rdb.AddHook(rt)
		ctx := context.Background()
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		closed, err := redcoord.New(rdb)
		require.NoError(t, err)
		require.NoError(t, closed.Close(ctx))
		for _, tc := range []struct {
			name string
			ctx  context.Context
			m    *rrwlock.RWMutex
			want error
		}{
			{"cancelled", cancelled, rrwlock.New(locktest.NewClient(t, rdb), "n"), context.Canceled},
			{"closed", ctx, rrwlock.New(closed, "n"), redcoord.ErrClosed},
		} {
			for op, err := range everyMethod(tc.ctx, tc.m) {
				if (op == "Unlock" || op == "RUnlock") && tc.ctx == cancelled {
					// A done ctx does not stop a release (see "Releases" in
					// package redcoord): this handle holds nothing.
					assert.ErrorIs(t, err, redcoord.ErrNotHeld, "%s: %s", tc.name, op)
					continue
				}
				assert.ErrorIs(t, err, tc.want, "%s: %s", tc.name, op)
				if strings.Contains(op, "Lock") && !strings.Contains(op, "Unlock") {
					assert.ErrorIs(t, err, redcoord.ErrNotAcquired, "%s: %s", tc.name, op)
				}
			}
		}
		assert.Zero(t, rt.Load(), "no I/O")
		assert.Empty(t, locktest.Keys(t, rdb))
	})
}

// A key of the wrong type, or another primitive's hash, under one of the
// lock's keys is ErrWrongType from every method, and is left as it was.
func TestWrongType(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		c := locktest.NewClient(t, rdb)
		ctx := context.Background()
		for _, part := range []string{"lock", "fence", "readers", "leases", "writers"} {
			key := "rc:{" + part + "}:" + part
			require.NoError(t, rdb.Set(ctx, key, "x", 0).Err())
			for op, err := range everyMethod(ctx, rrwlock.New(c, part)) {
				wrongType(t, key, op, err)
			}
			assert.Equal(t, "x", rdb.Get(ctx, key).Val())
			assert.Equal(t, []string{key}, locktest.Keys(t, rdb), "nothing written beside %s", key)
			require.NoError(t, rdb.Del(ctx, key).Err())
		}
		for _, key := range []string{"rc:{other}:lock", "rc:{other}:readers"} {
			require.NoError(t, rdb.HSet(ctx, key, "k", "rlock", "o", "x", "c", 1).Err())
			before := snapshot(t, rdb)
			for op, err := range everyMethod(ctx, rrwlock.New(c, "other")) {
				if wrongType(t, key, op, err) {
					assert.ErrorContains(t, err, "rlock", "%s: %s", key, op)
				}
			}
			assert.Equal(t, before, snapshot(t, rdb))
			require.NoError(t, rdb.Del(ctx, key).Err())
		}
	})
}

// wrongType checks the error of method op of a handle that holds nothing,
// on a name whose key holds another type: ErrWrongType, except for a
// release or an extension, which is ErrNotHeld without a request. It
// reports whether it expected ErrWrongType.
func wrongType(t *testing.T, key, op string, err error) bool {
	t.Helper()
	if op == "Unlock" || op == "RUnlock" || op == "Extend" || op == "RExtend" {
		assert.ErrorIs(t, err, redcoord.ErrNotHeld, "%s: %s", key, op)
		return false
	}
	assert.ErrorIs(t, err, redcoord.ErrWrongType, "%s: %s", key, op)
	return true
}

// Lock by a reader is refused at once, and leaves no waiting writer behind.
func TestUpgradeRefused(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		c := locktest.NewClient(t, rdb)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang guard
		defer cancel()
		r, r2 := rrwlock.New(c, "n"), rrwlock.New(c, "n")
		require.NoError(t, r.RLock(ctx))
		require.NoError(t, r2.RLock(ctx))
		ok, tryErr := r.TryLock(ctx)
		assert.False(t, ok)
		for op, err := range map[string]error{"Lock": r.Lock(ctx), "LockWithLease": r.LockWithLease(ctx, time.Minute), "TryLock": tryErr} {
			assert.ErrorIs(t, err, redcoord.ErrUpgrade, op)
			assert.ErrorIs(t, err, redcoord.ErrNotAcquired, op)
			assert.NoError(t, ctx.Err(), "%s waited", op)
		}
		assert.Zero(t, stateOf(t, r).WaitingWriters)
		assert.NotContains(t, locktest.Keys(t, rdb), "rc:{n}:writers")
		r3 := rrwlock.New(c, "n")
		assert.True(t, tryR(t, r3), "no writer left registered")
		require.NoError(t, r3.RUnlock(ctx))
		assert.Zero(t, r.Token())
		hub, err := c.Hub()
		require.NoError(t, err)
		assert.Zero(t, hub.Stats().Waiters)

		require.NoError(t, r.RUnlock(ctx))
		require.NoError(t, r2.RUnlock(ctx))
		require.NoError(t, r.Lock(ctx), "RUnlock, then Lock")
		require.NoError(t, r.Unlock(ctx))
	})
}

// everyMethod calls every method of m that may fail, with ctx, and returns
// their errors by name. Acquires are given a short bounded wait: an
// argument that should be refused must not make them block.
func everyMethod(ctx context.Context, m *rrwlock.RWMutex) map[string]error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ops := map[string]error{
		"Lock":           m.Lock(ctx),
		"LockWithLease":  m.LockWithLease(ctx, time.Second),
		"TryLock":        locktest.Second(m.TryLock(ctx)),
		"Unlock":         m.Unlock(ctx),
		"RLock":          m.RLock(ctx),
		"RLockWithLease": m.RLockWithLease(ctx, time.Second),
		"TryRLock":       locktest.Second(m.TryRLock(ctx)),
		"RUnlock":        m.RUnlock(ctx),
		"Extend":         m.Extend(ctx, time.Second),
		"RExtend":        m.RExtend(ctx, time.Second),
		"ForceUnlock":    locktest.Second(m.ForceUnlock(ctx)),
		"State":          locktest.Second(m.State(ctx)),
	}
	return ops
}

// Releasing what the handle does not hold is ErrNotHeld, and writes nothing.
func TestReleaseNotHeld(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		c := locktest.NewClient(t, rdb)
		ctx := context.Background()
		w, r, other := rrwlock.New(c, "n"), rrwlock.New(c, "n"), rrwlock.New(c, "n")
		for _, err := range []error{other.Unlock(ctx), other.RUnlock(ctx)} {
			assert.ErrorIs(t, err, redcoord.ErrNotHeld, "free lock")
		}
		assert.Empty(t, locktest.Keys(t, rdb))

		require.NoError(t, w.Lock(ctx))
		held, cancel := w.Context(ctx)
		defer cancel()
		require.NoError(t, w.RLock(held)) // holds both
		before := snapshot(t, rdb)
		for op, err := range map[string]error{"Unlock": other.Unlock(ctx), "RUnlock": other.RUnlock(ctx)} {
			assert.ErrorIs(t, err, redcoord.ErrNotHeld, op)
			assert.NotErrorIs(t, err, redcoord.ErrLeaseLost, op)
			assert.ErrorContains(t, err, `rrwlock "n"`, op)
			assert.ErrorContains(t, err, "not held by this handle", op)
		}
		assert.Equal(t, before, snapshot(t, rdb), "Redis unchanged")
		require.NoError(t, w.RUnlock(ctx))
		before = snapshot(t, rdb)
		assert.ErrorIs(t, w.RUnlock(ctx), redcoord.ErrNotHeld, "the writer's read hold is gone")
		assert.Equal(t, before, snapshot(t, rdb))
		require.NoError(t, w.Unlock(ctx))

		require.NoError(t, r.RLock(ctx))
		before = snapshot(t, rdb)
		assert.ErrorIs(t, r.Unlock(ctx), redcoord.ErrNotHeld, "a reader is no writer")
		assert.ErrorIs(t, other.RUnlock(ctx), redcoord.ErrNotHeld)
		assert.Equal(t, before, snapshot(t, rdb))
		require.NoError(t, r.RUnlock(ctx))
	})
}

// snapshot returns every key's type and contents but the release markers'
// (and TTLs), to compare before and after a call that must write nothing.
func snapshot(t *testing.T, rdb *redis.Client) map[string]any {
	t.Helper()
	ctx := context.Background()
	out := map[string]any{}
	for _, k := range locktest.Keys(t, rdb) {
		switch typ := rdb.Type(ctx, k).Val(); typ {
		case "hash":
			out[k] = rdb.HGetAll(ctx, k).Val()
		case "zset":
			out[k] = rdb.ZRangeWithScores(ctx, k, 0, -1).Val()
		default:
			out[k] = typ + ":" + rdb.Get(ctx, k).Val()
		}
	}
	return out
}
