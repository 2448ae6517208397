package rfairlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rfairlock"
)

// A fixed lease granted to a waiter runs from the grant, not from the
// waiter's last re-check, which may be long before: Lost closes
// lease.Margin before the lease ends in Redis, not earlier. Whether the
// waiter learns of the grant from its message or, the message lost, from a
// later re-check.
func TestGrantedFixedLeaseRunsFromTheGrant(t *testing.T) {
	const fixed = 5 * time.Second
	for _, lostMessage := range []bool{false, true} {
		locktest.InBubble(t, 2, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
			ctx := context.Background()
			holder := rfairlock.New(ps[0].C, "n")
			// Re-checks only when the holder's lease would run out (30s).
			waiter := rfairlock.New(ps[1].C, "n", rfairlock.WithMaxPollInterval(time.Hour))
			require.NoError(t, holder.Lock(ctx))
			done := make(chan result, 1)
			go func() {
				err := waiter.LockWithLease(ctx, fixed)
				done <- result{err, time.Now()}
			}()
			synctest.Wait()
			if lostMessage {
				ps[1].Faults.Blackhole()
			}
			time.Sleep(28 * time.Second) // long after the waiter's last check, 2s before its next
			granted := time.Now()
			require.NoError(t, holder.Unlock(ctx))
			r := <-done
			require.NoError(t, r.err)
			lost := waiter.Lost()
			t.Logf("message lost: %v; acquired %v after the grant", lostMessage, r.at.Sub(granted))
			if lostMessage {
				require.Greater(t, r.at.Sub(granted), time.Duration(0), "the message was not lost")
			}

			time.Sleep(fixed - lease.Margin(fixed) - r.at.Sub(granted) - time.Millisecond)
			synctest.Wait()
			assert.False(t, locktest.IsClosed(lost), "Lost closed more than the margin before the lease ends in Redis")
			locked, err := waiter.IsLocked(ctx)
			require.NoError(t, err)
			assert.True(t, locked)
			time.Sleep(2 * time.Millisecond)
			synctest.Wait()
			assert.True(t, locktest.IsClosed(lost), "Lost not closed the margin before the lease ended")
			locked, err = waiter.IsLocked(ctx)
			require.NoError(t, err)
			assert.True(t, locked, "Redis has the hold until the lease ends")
			time.Sleep(lease.Margin(fixed))
			locked, err = waiter.IsLocked(ctx)
			require.NoError(t, err)
			assert.False(t, locked, "the lease ended in Redis")
			ps[1].Faults.Unblackhole()
		})
	}
}
