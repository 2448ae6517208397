package rrwlock_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rrwlock"
)

// Goroutines sharing one handle's write side exclude each other; the
// hold's Context re-enters (see "Sharing a handle" at redcoord.Locker).
func TestSharedHandle(t *testing.T) {
	locktest.Shared(t, locktest.OneServer(func(c *redcoord.Client, name string) redcoord.Locker {
		return rrwlock.New(c, name)
	}))
}

// Goroutines sharing a handle may all read at once; a write hold of the
// handle's keeps the others' reads out until it ends, unless they come
// through its Context (a downgrade).
func TestSharedHandleReads(t *testing.T) {
	locktest.InBubble(t, 1, func(t *testing.T, _ *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		m := rrwlock.New(ps[0].C, "shared")
		r := m.RLocker()
		require.NoError(t, r.Lock(ctx))
		read := make(chan error, 1)
		go func() { read <- r.Lock(ctx) }()
		require.NoError(t, <-read, "a second goroutine reads beside the first")
		require.NoError(t, r.Unlock(ctx))
		require.NoError(t, r.Unlock(ctx))

		require.NoError(t, m.Lock(ctx))
		synctest.Wait()
		before := ps[0].RT.Load()
		ok, err := r.TryLock(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "no read beside the handle's write hold")
		go func() { read <- r.Lock(ctx) }()
		synctest.Wait()
		assert.Equal(t, before, ps[0].RT.Load(), "and no request while it waits")
		select {
		case err := <-read:
			t.Fatalf("a read beside the handle's write hold returned %v", err)
		default:
		}
		hctx, cancel := m.Context(ctx)
		defer cancel()
		require.NoError(t, m.RLock(hctx), "a downgrade, through the write hold's Context")
		require.NoError(t, m.Unlock(ctx))
		require.NoError(t, <-read, "the waiting read once the write hold ends")
		require.NoError(t, m.RUnlock(ctx))
		require.NoError(t, m.RUnlock(ctx))
		st, err := m.State(ctx)
		require.NoError(t, err)
		assert.Equal(t, rrwlock.Free, st.Mode)
	})
}
