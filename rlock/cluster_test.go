package rlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
)

// newExclusive is New for the helpers of exclusive holds (internal/locktest).
func newExclusive(c *redcoord.Client, name string) locktest.Exclusive { return rlock.New(c, name) }

// On one cluster of 3 masters: mutual exclusion over names that every
// master serves, a slot moved while waiters wait (locktest.ClusterSuite),
// and MultiMutexes across slots (multiAcrossSlots).
func TestCluster(t *testing.T) { locktest.ClusterSuite(t, newExclusive, multiAcrossSlots) }

// multiAcrossSlots locks names of two that share a slot and of one on each
// master: a MultiMutex holds them all, another over some of them takes
// none, and 8 handles in 4 processes locking random subsets never hold a
// name twice at once, never deadlock, and never send a script across
// slots.
func multiAcrossSlots(t *testing.T, cl *redistest.Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rdb := cl.Client(t)
	slotOf := func(name string) int64 { return rdb.ClusterKeySlot(ctx, "rc:{"+name+"}:lock").Val() }
	var names []string
	bySlot := map[int64]string{}
	for i := 0; len(names) < 2 && i < 2000; i++ { // two names in one slot
		name := fmt.Sprint("m", i)
		if other, ok := bySlot[slotOf(name)]; ok {
			names = append(names, other, name)
		}
		bySlot[slotOf(name)] = name
	}
	require.Len(t, names, 2, "two names in one slot")
	masters := map[string]bool{}
	for i := 0; len(masters) < 3 && i < 300; i++ {
		name := fmt.Sprint("x", i)
		if m := cl.MasterFor("rc:{" + name + "}:lock"); !masters[m] {
			masters[m] = true
			names = append(names, name)
		}
	}
	require.Len(t, names, 5)
	cs := make([]*redcoord.Client, 4)
	for i := range cs {
		cs[i] = locktest.NewClient(t, cl.Client(t))
	}

	all := rlock.NewMulti(cs[0], names)
	require.NoError(t, all.Lock(ctx))
	assert.Len(t, all.Tokens(), 5)
	ok, err := rlock.NewMulti(cs[1], names[1:3]).TryLock(ctx)
	require.NoError(t, err)
	assert.False(t, ok)
	require.NoError(t, all.Unlock(ctx))

	lockRandomSets(ctx, t, cs, names, 8, 20)
}
