package rrwlock_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rrwlock"
)

func TestUncontendedAllocations(t *testing.T) {
	locktest.UncontendedAllocations(t, rrwlock.New(locktest.NewClient(t, redistest.Real(t).Client(t)), "allocs"), 30)
}

// A handle's value (WithValue) costs an RLock+RUnlock no allocation: it is
// boxed once, with the handle.
func TestReadValueAllocations(t *testing.T) {
	c := locktest.NewClient(t, redistest.Real(t).Client(t))
	ctx := context.Background()
	perCycle := func(m *rrwlock.RWMutex) float64 {
		require.NoError(t, m.RLock(ctx)) // loads the scripts, starts the watchdog
		require.NoError(t, m.RUnlock(ctx))
		return testing.AllocsPerRun(200, func() {
			if err := m.RLock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := m.RUnlock(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
	plain := perCycle(rrwlock.New(c, "plain"))
	valued := perCycle(rrwlock.New(c, "valued", rrwlock.WithValue("worker-7")))
	t.Logf("%.1f allocations per RLock+RUnlock, %.1f with a value", plain, valued)
	assert.LessOrEqual(t, valued, plain)
}
