package locktest

import (
	"context"
	"sort"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/redistest"
)

// ExclusiveOpener is how a test takes and gives back an exclusive hold of the
// name "n" with a new handle of c (rlock's Lock, rrwlock's write Lock).
type ExclusiveOpener func(c *redcoord.Client) (lock, unlock func(context.Context) error)

// LiveWokenBeforeDead checks, in a synctest bubble, that releases wake
// live registrations before those of dead processes. 5 processes die, each
// with a blocked acquire: their registrations (in registry) stay until
// their deadlines, a lease TTL (30s) after their last renewal. 5 live waiters,
// each in its own process, register after them and are renewed by their
// watchdogs every 10s. 20s later the holder releases: each hand-off is
// immediate, none waits for a poll (1s). The live waiters' polls come at
// different times, between the releases, so that a poll does not hide a
// wake lost on a dead process.
func LiveWokenBeforeDead(t *testing.T, registry string, open ExclusiveOpener) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		const waiters = 5
		mr, opts := redistest.Bubble()
		defer mr.Close()
		ps := make([]*Proc, 1+2*waiters)
		for i := range ps {
			ps[i] = NewProc(t, opts)
			defer ps[i].Kill()
		}
		registered := func() int {
			n, err := ps[0].RDB.ZCard(ctx, registry).Result()
			require.NoError(t, err)
			return int(n)
		}
		lock, unlock := open(ps[0].C)
		require.NoError(t, lock(ctx))

		dead := make(chan error, waiters)
		for _, p := range ps[1 : 1+waiters] {
			lock, _ := open(p.C)
			go func() { dead <- lock(ctx) }()
		}
		synctest.Wait()
		require.Equal(t, waiters, registered())
		for _, p := range ps[1 : 1+waiters] {
			p.Kill() // its leave cannot reach Redis: the registration stays
		}
		for range waiters {
			require.ErrorIs(t, <-dead, redcoord.ErrNotAcquired)
		}

		acquired := make(chan time.Time, waiters)
		for _, p := range ps[1+waiters:] {
			time.Sleep(150 * time.Millisecond)
			lock, unlock := open(p.C)
			go func() {
				assert.NoError(t, lock(ctx))
				at := time.Now()
				assert.NoError(t, unlock(ctx))
				acquired <- at
			}()
			synctest.Wait()
		}
		require.Equal(t, 2*waiters, registered())
		// Two watchdog ticks: the live registrations were renewed, the
		// dead ones were not (and have not lapsed).
		time.Sleep(20*time.Second + 50*time.Millisecond)
		require.Equal(t, 2*waiters, registered())

		last := time.Now()
		require.NoError(t, unlock(ctx))
		var gaps []time.Duration
		for range waiters {
			select {
			case at := <-acquired:
				gaps = append(gaps, at.Sub(last))
				last = at
			case <-time.After(time.Minute):
				t.Fatal("a live waiter did not get the lock")
			}
		}
		t.Logf("hand-off gaps %v", gaps)
		sort.Slice(gaps, func(i, j int) bool { return gaps[i] > gaps[j] })
		assert.Zero(t, gaps[0], "a hand-off waited for a poll: a release woke a dead registration")
	})
}
