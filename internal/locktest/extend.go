package locktest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
)

// Extendable is a handle whose hold's lease can be set (Extend), and that
// can try once with a fixed lease (TryLockWithLease).
type Extendable interface {
	redcoord.Locker
	TryLockWithLease(ctx context.Context, lease time.Duration) (bool, error)
	Extend(ctx context.Context, lease time.Duration) error
}

// Extends checks, in a synctest bubble whose Clients have the default lease
// TTL (30s), that Extend on a handle that holds nothing is ErrNotHeld;
// that a hold extended to 45s (which Holder, where the handle has it,
// reports as a fixed lease of 45s) outlives the TTL and is lost when the 45s
// run out, after which Extend and Unlock are ErrLeaseLost; and that
// TryLockWithLease takes a free lock whose Lost closes when its lease runs
// out.
func Extends(t *testing.T, x Extendable) {
	t.Helper()
	ctx := context.Background()
	assert.ErrorIs(t, x.Extend(ctx, time.Second), redcoord.ErrNotHeld)
	require.NoError(t, x.Lock(ctx))
	require.NoError(t, x.Extend(ctx, 45*time.Second))
	if h, ok := x.(interface {
		Holder(context.Context) (redcoord.Holder, bool, error)
	}); ok {
		hd, held, err := h.Holder(ctx)
		require.NoError(t, err)
		require.True(t, held)
		assert.True(t, hd.Fixed, "Holder tells of the fixed lease")
		assert.Equal(t, 45*time.Second, hd.Lease)
	}
	lost := x.Lost()
	time.Sleep(44 * time.Second)
	assert.False(t, IsClosed(lost), "the extended lease outlives the TTL")
	time.Sleep(2 * time.Second)
	assert.True(t, IsClosed(lost), "lost when the extended lease ran out")
	assert.ErrorIs(t, x.Extend(ctx, time.Second), redcoord.ErrLeaseLost)
	assert.ErrorIs(t, x.Unlock(ctx), redcoord.ErrLeaseLost)

	ok, err := x.TryLockWithLease(ctx, 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	lost = x.Lost()
	time.Sleep(4 * time.Second)
	assert.False(t, IsClosed(lost))
	time.Sleep(2 * time.Second)
	assert.True(t, IsClosed(lost), "lost when its fixed lease ran out")
}
