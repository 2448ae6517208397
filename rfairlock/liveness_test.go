package rfairlock_test

import (
	"context"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rfairlock"
)

// These tests run in a synctest bubble on a miniredis whose clock is the
// bubble's, so durations are exact. The Client defaults hold: lease TTL and
// heartbeat 30s, renewed every 10s; poll interval 1s.

// lockAsync starts m.Lock and returns where its result arrives, with the
// bubble time at which it returned.
func lockAsync(m *rfairlock.Mutex) <-chan result {
	ch := make(chan result, 1)
	go func() {
		err := m.Lock(context.Background())
		ch <- result{err, time.Now()}
	}()
	return ch
}

type result struct {
	err error
	at  time.Time
}

// A waiter killed while queued is skipped once its heartbeat lapses; a
// release before that grants it the lock, which passes on when the grant's
// lease runs out. Either way the queue moves at most one heartbeat TTL and
// one renew interval after the release.
func TestDeadWaiterIsSkipped(t *testing.T) {
	for _, tc := range []struct {
		name      string
		afterKill time.Duration // when the holder releases
		delayed   bool          // whether the dead waiter still holds up the queue
	}{
		{"released at once", 0, true},
		{"released half a TTL later", 15 * time.Second, true},
		{"released after its heartbeat lapsed", 30 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			locktest.InBubble(t, 3, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
				ctx := context.Background()
				holder := rfairlock.New(ps[0].C, "n")
				dead := rfairlock.New(ps[1].C, "n")
				next := rfairlock.New(ps[2].C, "n")
				require.NoError(t, holder.Lock(ctx))
				deadDone := lockAsync(dead)
				synctest.Wait()
				nextDone := lockAsync(next)
				synctest.Wait()
				n, err := holder.QueueLength(ctx)
				require.NoError(t, err)
				require.Equal(t, 2, n)

				time.Sleep(5 * time.Second) // between two heartbeat ticks
				ps[1].Kill()
				require.Error(t, (<-deadDone).err)
				assert.Equal(t, 2, mustQueueLength(t, holder), "the dead waiter's clean-up reached Redis")
				time.Sleep(tc.afterKill)
				released := time.Now()
				require.NoError(t, holder.Unlock(ctx))
				r := <-nextDone
				require.NoError(t, r.err)
				delay := r.at.Sub(released)
				ttl := ps[2].C.LeaseTTL()
				t.Logf("the next waiter acquired %v after the release", delay)
				if tc.delayed {
					assert.GreaterOrEqual(t, delay, ttl, "the dead waiter was not granted the lock: the test proves nothing")
				} else {
					assert.Zero(t, delay, "a lapsed waiter was not skipped at once")
				}
				assert.LessOrEqual(t, delay, ttl+ttl/3, "the queue was held up longer than one heartbeat TTL and one renew interval")
				n64, err := next.HoldCount(ctx)
				require.NoError(t, err)
				assert.Equal(t, int64(1), n64)
				require.NoError(t, next.Unlock(ctx))
				assert.Equal(t, []string{"rc:{n}:fence"}, locktest.WithoutMarkers(mr.Keys()), "the queue is empty")
			})
		})
	}
}

// A waiter granted the lock that dies before it sees the grant holds the
// queue up for the grant's lease, then the lock passes on.
func TestGrantToDeadWaiterPassesOn(t *testing.T) {
	locktest.InBubble(t, 3, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		holder := rfairlock.New(ps[0].C, "n")
		dead := rfairlock.New(ps[1].C, "n")
		next := rfairlock.New(ps[2].C, "n")
		require.NoError(t, holder.Lock(ctx))
		holderToken := holder.Token()
		deadDone := lockAsync(dead)
		synctest.Wait()
		nextDone := lockAsync(next)
		synctest.Wait()
		ps[1].Faults.Blackhole() // the grant message never arrives
		time.Sleep(time.Second / 3)

		released := time.Now()
		require.NoError(t, holder.Unlock(ctx))
		h, ok, err := holder.Holder(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, dead.Owner(), h.Owner, "granted to the first waiter")
		assert.Greater(t, h.Token, holderToken, "the grant is a fresh hold, with a greater token")
		ps[1].Kill() // before its next re-check
		require.Error(t, (<-deadDone).err)

		r := <-nextDone
		require.NoError(t, r.err)
		delay := r.at.Sub(released)
		ttl := ps[2].C.LeaseTTL()
		t.Logf("the next waiter acquired %v after the release", delay)
		assert.GreaterOrEqual(t, delay, ttl, "the grant did not last its lease")
		assert.LessOrEqual(t, delay, ttl+ttl/3, "the queue was held up longer than one lease TTL and one renew interval")
		assert.Greater(t, next.Token(), h.Token, "the lock passed on as a fresh hold, after the dead waiter's grant")
		require.NoError(t, next.Unlock(ctx))
	})
}

// A holder that dies keeps the lock for its lease; then the first waiter is
// granted it by the next script that finds it free.
func TestDeadHolderPassesToTheHead(t *testing.T) {
	locktest.InBubble(t, 3, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		holder := rfairlock.New(ps[0].C, "n")
		first := rfairlock.New(ps[1].C, "n")
		second := rfairlock.New(ps[2].C, "n")
		require.NoError(t, holder.Lock(ctx))
		firstDone := lockAsync(first)
		synctest.Wait()
		secondDone := lockAsync(second)
		synctest.Wait()
		time.Sleep(5 * time.Second)

		killed := time.Now()
		ps[0].Kill()
		r := <-firstDone
		require.NoError(t, r.err)
		ttl := ps[1].C.LeaseTTL()
		delay := r.at.Sub(killed)
		t.Logf("the first waiter acquired %v after the holder died", delay)
		assert.GreaterOrEqual(t, delay, ttl-5*time.Second, "before the dead holder's lease ran out")
		assert.LessOrEqual(t, delay, ttl+ttl/3)
		require.NoError(t, first.Unlock(ctx))
		r = <-secondDone
		require.NoError(t, r.err)
		require.NoError(t, second.Unlock(ctx))
	})
}

// A grant message that is lost (the waiter's subscriber connection
// blackholed) costs at most one poll interval: the waiter's re-check finds
// it holds the lock, once. A delivered one costs one round trip, the
// watchdog's renewal that confirms it still stands, to a Client that has
// not held before (cold); none to one that has (warm), which hears forced
// unlocks on its own channel and takes the grant as it comes.
func TestLostGrantCostsAtMostOnePollInterval(t *testing.T) {
	const poll = time.Second
	for _, c := range []struct{ lost, warm bool }{{false, false}, {false, true}, {true, false}, {true, true}} {
		locktest.InBubble(t, 2, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
			lost := c.lost
			ctx := context.Background()
			holder := rfairlock.New(ps[0].C, "n")
			waiter := rfairlock.New(ps[1].C, "n", rfairlock.WithMaxPollInterval(poll))
			if c.warm {
				other := rfairlock.New(ps[1].C, "other")
				require.NoError(t, other.Lock(ctx))
				require.NoError(t, other.Unlock(ctx))
				for i := 0; i < 100 && len(mr.PubSubChannels("rc:ch:*")) == 0; i++ {
					time.Sleep(10 * time.Millisecond) // the Client subscribes its own channel
				}
			}
			require.NoError(t, holder.Lock(ctx))
			holderToken := holder.Token()
			time.Sleep(ps[0].C.LeaseTTL()/3 + time.Millisecond) // a renewal loads lock_renew
			synctest.Wait()
			done := lockAsync(waiter)
			synctest.Wait() // queued, subscribed, asleep
			if lost {
				ps[1].Faults.Blackhole()
			}
			time.Sleep(poll / 3) // release between two of the waiter's checks
			ps[1].RT.Reset()
			released := time.Now()
			require.NoError(t, holder.Unlock(ctx))
			r := <-done
			require.NoError(t, r.err)
			gap := r.at.Sub(released)
			t.Logf("grant message lost: %v, warm: %v; acquired %v after the release", lost, c.warm, gap)
			if lost {
				assert.Greater(t, gap, time.Duration(0), "the message was not lost: the test proves nothing")
				assert.LessOrEqual(t, gap, poll)
			} else {
				assert.Zero(t, gap, "a delivered grant wakes the waiter at once")
				trips := int64(1) // its confirmation
				if c.warm {
					trips = 0
				}
				assert.Equal(t, trips, ps[1].RT.Load(), "the round trips a delivered grant costs")
			}
			n, err := waiter.HoldCount(ctx)
			require.NoError(t, err)
			assert.Equal(t, int64(1), n, "the grant was counted twice")
			assert.Greater(t, waiter.Token(), holderToken)
			assert.Equal(t, strconv.FormatUint(waiter.Token(), 10), mr.HGet("rc:{n}:fence", "n"), "one token for the grant, however it was seen")
			require.NoError(t, waiter.Unlock(ctx))
			ps[1].Faults.Unblackhole()
		})
	}
}

func mustQueueLength(t *testing.T, m *rfairlock.Mutex) int {
	t.Helper()
	n, err := m.QueueLength(context.Background())
	require.NoError(t, err)
	return n
}
