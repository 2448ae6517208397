package locktest

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// UncontendedAllocations checks that one uncontended Lock+Unlock of x, on
// a real redis-server, allocates at most max times, go-redis's own included
// (about 11: a command, its reply and the pool's connection check, each
// way). It counts, it does not time. AllocsPerRun counts every
// goroutine's allocations, and goroutines of the package's earlier tests
// may still run (a Client reconnecting to a server a test stopped), so it
// takes the least of three counts: others' allocations only add.
func UncontendedAllocations(t *testing.T, x Exclusive, max float64) {
	ctx := context.Background()
	require.NoError(t, x.Lock(ctx)) // loads the scripts, starts the watchdog
	require.NoError(t, x.Unlock(ctx))
	n := math.Inf(1)
	for range 3 {
		n = min(n, testing.AllocsPerRun(200, func() {
			if err := x.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := x.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}))
	}
	t.Logf("%.1f allocations per Lock+Unlock", n)
	assert.LessOrEqual(t, n, max)
}
