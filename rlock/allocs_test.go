package rlock_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
)

// maxAllocs bounds the allocations of one uncontended Lock+Unlock, go-redis's
// included (about 11 of them: a command, its reply and the pool's
// connection check, each way).
const maxAllocs = 30

// An uncontended Lock+Unlock allocates at most maxAllocs times. It counts,
// it does not time.
func TestUncontendedAllocations(t *testing.T) {
	rdb := redistest.Real(t).Client(t)
	m := rlock.New(locktest.NewClient(t, rdb), "allocs")
	ctx := context.Background()
	require.NoError(t, m.Lock(ctx)) // loads the scripts, starts the watchdog
	require.NoError(t, m.Unlock(ctx))
	n := testing.AllocsPerRun(200, func() {
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.1f allocations per Lock+Unlock", n)
	assert.LessOrEqual(t, n, float64(maxAllocs))
}
