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
// lock on, by a Client that does not hear forces yet (cold: it never held,
// so it does not listen on its own channel), is not taken for the lock:
// the waiter asks Redis, finds the grant gone and waits again while the
// next waiter holds the lock. A Client that hears forces (warm) takes a
// grant that no notice ended without asking: its Lock returns, and the
// force's notice, a read behind the grant on the same connection, ends
// the hold (Lost closes), as it ends any hold forced; when the notice
// comes in the same read as the grant, it is heard first and the waiter
// does not return. Either way the waiter is then served in turn.
func TestStaleGrantAfterForceUnlock(t *testing.T) {
	for _, warm := range []bool{false, true} {
		t.Run(map[bool]string{false: "cold", true: "warm"}[warm], func(t *testing.T) {
			staleGrantAfterForceUnlock(t, warm)
		})
	}
}

func staleGrantAfterForceUnlock(t *testing.T, warm bool) {
	locktest.InBubble(t, 3, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		if warm {
			other := rfairlock.New(ps[1].C, "other")
			require.NoError(t, other.Lock(ctx))
			require.NoError(t, other.Unlock(ctx))
			// The Client subscribes its own channel in the background
			// (it may wait out a retry first): the grant is trusted only
			// once it has.
			for i := 0; i < 100 && len(mr.PubSubChannels("rc:ch:*")) == 0; i++ {
				time.Sleep(10 * time.Millisecond)
			}
			require.NotEmpty(t, mr.PubSubChannels("rc:ch:*"), "the Client's channel is subscribed")
		}
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

		time.Sleep(100 * time.Millisecond) // the stale grant message arrives
		synctest.Wait()
		select {
		case r := <-firstDone:
			if !warm {
				t.Fatalf("Lock returned %v on a grant that ForceUnlock had ended: two holders", r.err)
			}
			// Warm: the grant was read before the force's notice, which
			// comes on the same connection after it, a read later. The
			// Lock took effect at the grant, before the force, and
			// returned: it is told as every forced holder is.
			require.NoError(t, r.err)
			lost := first.Lost()
			require.False(t, locktest.IsClosed(lost), "lost before the notice")
			time.Sleep(100 * time.Millisecond) // the notice arrives
			synctest.Wait()
			require.True(t, locktest.IsClosed(lost), "the force's notice ends the grant taken")
			firstDone = lockAsync(first)
		default:
			// Not returned: cold, it asked Redis; warm, the notice came
			// in the read that brought the grant, and was heard first.
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
