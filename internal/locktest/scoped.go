package locktest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/redistest"
)

// Scoped checks a handle's Context: cancelled at once when nothing is
// held; kept through a re-entry's Unlock; cancelled by the last Unlock
// before it returns, with ErrNotHeld naming what; and, once deleting the
// key behind it loses the hold, with ErrLeaseLost naming it.
func Scoped(t *testing.T, x redcoord.Locker, what string, del func()) {
	t.Helper()
	ctx := context.Background()
	c, cancel := x.Context(ctx)
	require.Error(t, c.Err())
	assert.ErrorIs(t, context.Cause(c), redcoord.ErrNotHeld)
	cancel()

	require.NoError(t, x.Lock(ctx))
	c, cancel = x.Context(ctx)
	defer cancel()
	require.NoError(t, x.Lock(c), "a re-entry, through the hold's Context")
	require.NoError(t, x.Unlock(ctx))
	require.NoError(t, c.Err(), "a re-entry's Unlock keeps the hold")
	require.NoError(t, x.Unlock(ctx))
	require.Error(t, c.Err(), "cancelled before Unlock returned")
	assert.ErrorIs(t, context.Cause(c), redcoord.ErrNotHeld)
	assert.Contains(t, context.Cause(c).Error(), what)

	require.NoError(t, x.Lock(ctx))
	c, cancel = x.Context(ctx)
	defer cancel()
	del()
	select {
	case <-c.Done():
	case <-time.After(redistest.Patience(10 * time.Second)):
		t.Fatal("not cancelled when the hold was lost")
	}
	assert.ErrorIs(t, context.Cause(c), redcoord.ErrLeaseLost)
	assert.Contains(t, context.Cause(c).Error(), what)
	_ = x.Unlock(ctx)
}
