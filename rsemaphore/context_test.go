package rsemaphore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rsemaphore"
)

// A permit's Context is cancelled by its Release before Release returns,
// and when its fixed lease runs out; a permit this handle does not keep
// gets a cancelled one at once.
func TestPermitContext(t *testing.T) {
	srv := redistest.Real(t)
	ctx := context.Background()
	c := locktest.NewClient(t, srv.Client(t))
	s := rsemaphore.NewExpirable(c, "seats")
	require.NoError(t, s.SetPermits(ctx, 2))

	p, err := s.Acquire(ctx, rsemaphore.AcquireOptions{})
	require.NoError(t, err)
	pc, cancel := s.Context(ctx, p)
	defer cancel()
	require.NoError(t, pc.Err())
	other, done := rsemaphore.NewExpirable(c, "seats").Context(ctx, p)
	defer done()
	assert.ErrorIs(t, context.Cause(other), redcoord.ErrNotHeld, "another handle does not keep it")
	require.NoError(t, s.Release(ctx, p))
	require.Error(t, pc.Err(), "cancelled before Release returned")
	assert.ErrorIs(t, context.Cause(pc), redcoord.ErrNotHeld)

	p, err = s.Acquire(ctx, rsemaphore.AcquireOptions{Lease: 200 * time.Millisecond})
	require.NoError(t, err)
	pc, cancel = s.Context(ctx, p)
	defer cancel()
	select {
	case <-pc.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("not cancelled when the lease ran out")
	}
	assert.ErrorIs(t, context.Cause(pc), redcoord.ErrLeaseLost)
	assert.Contains(t, context.Cause(pc).Error(), "seats")
}
