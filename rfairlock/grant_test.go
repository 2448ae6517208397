package rfairlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rfairlock"
)

// A grant message read after ForceUnlock ended the grant and handed the
// lock on is not taken for the lock: the waiter checks the grant in Redis
// first, finds it gone, and waits again, while the next waiter holds the
// lock. Then it is served in turn.
func TestStaleGrantAfterForceUnlock(t *testing.T) {
	locktest.InBubble(t, 3, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		holder := rfairlock.New(ps[0].C, "n")
		first := rfairlock.New(ps[1].C, "n", rfairlock.WithMaxPollInterval(time.Hour))
		second := rfairlock.New(ps[2].C, "n", rfairlock.WithMaxPollInterval(time.Hour))
		require.NoError(t, holder.Lock(ctx))
		firstDone := lockAsync(first)
		synctest.Wait()
		secondDone := lockAsync(second)
		synctest.Wait() // both queued, first ahead

		ps[1].Faults.DelaySubscribers(100 * time.Millisecond)
		require.NoError(t, holder.Unlock(ctx)) // grants to first; its message is in flight
		forced, err := rfairlock.New(ps[0].C, "n").ForceUnlock(ctx)
		require.NoError(t, err)
		require.True(t, forced, "the grant was deleted")
		r := <-secondDone
		require.NoError(t, r.err, "the forced unlock handed the lock to the next waiter")

		time.Sleep(200 * time.Millisecond) // the stale grant message arrives
		synctest.Wait()
		select {
		case r := <-firstDone:
			t.Fatalf("Lock returned %v on a grant that ForceUnlock had ended: two holders", r.err)
		default:
		}
		assert.Zero(t, first.Token())
		ps[1].Faults.DelaySubscribers(0)

		require.NoError(t, second.Unlock(ctx))
		r = <-firstDone
		require.NoError(t, r.err, "served next")
		assert.Greater(t, first.Token(), second.Token())
		require.NoError(t, first.Unlock(ctx))
	})
}
