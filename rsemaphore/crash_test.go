package rsemaphore_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rsemaphore"
)

// These tests run in a synctest bubble on a miniredis whose clock is the
// bubble's, so durations are exact. The Client defaults hold: lease TTL
// 30s, renewed every 10s from the first watched lease; poll interval 1s.

// crashResult is the outcome of an Acquire and the bubble time it returned at.
type crashResult struct {
	p   rsemaphore.Permit
	err error
	at  time.Time
}

func crashAcquire(s *rsemaphore.ExpirableSemaphore, opts rsemaphore.AcquireOptions) <-chan crashResult {
	ch := make(chan crashResult, 1)
	go func() {
		p, err := s.Acquire(context.Background(), opts)
		ch <- crashResult{p, err, time.Now()}
	}()
	return ch
}

// crashPending fails the test if an Acquire has returned.
func crashPending(t *testing.T, chs ...<-chan crashResult) {
	t.Helper()
	synctest.Wait()
	for i, ch := range chs {
		select {
		case r := <-ch:
			t.Fatalf("waiter %d returned while the permits are held: %v", i, r.err)
		default:
		}
	}
}

// The permits of a holder that dies without releasing them, kept by its
// watchdog, come back when their last renewal runs out: no sooner than a
// TTL less a renew interval after the death, no later than a TTL and a
// renew interval; precisely, when the last renewal runs out, a TTL after
// it. Waiters in other processes then take them, each one.
// Meanwhile, while the holder lives, its permits outlast their TTL.
func TestCrashedHolderPermitsReturn(t *testing.T) {
	for _, after := range []time.Duration{time.Millisecond, 5 * time.Second, 10*time.Second - time.Millisecond} {
		t.Run(fmt.Sprintf("killed %v after a renewal", after), func(t *testing.T) {
			locktest.InBubble(t, 3, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
				ctx := context.Background()
				holder := rsemaphore.NewExpirable(ps[0].C, "n")
				require.NoError(t, holder.SetPermits(ctx, 2))
				held := []rsemaphore.Permit{
					expAcquire(t, holder, rsemaphore.AcquireOptions{}),
					expAcquire(t, holder, rsemaphore.AcquireOptions{}),
				}
				time.Sleep(time.Second)
				waiters := []*rsemaphore.ExpirableSemaphore{
					rsemaphore.NewExpirable(ps[1].C, "n"), rsemaphore.NewExpirable(ps[2].C, "n"),
				}
				w1 := crashAcquire(waiters[0], rsemaphore.AcquireOptions{})
				w2 := crashAcquire(waiters[1], rsemaphore.AcquireOptions{})
				time.Sleep(59*time.Second + after) // two TTLs: renewed at 10s, 20s, ... 60s
				crashPending(t, w1, w2)
				for _, p := range held {
					assert.False(t, locktest.IsClosed(p.Lost()), "a live holder's permit was lost")
				}

				killed := time.Now()
				ps[0].Kill()
				ttl := ps[1].C.LeaseTTL()
				var tokens []uint64
				for i, w := range []<-chan crashResult{w1, w2} {
					r := <-w
					require.NoError(t, r.err)
					delay := r.at.Sub(killed)
					t.Logf("waiter %d acquired %v after the holder died", i, delay)
					assert.GreaterOrEqual(t, delay, ttl-ttl/3, "the dead holder's permit came back before its last renewal ran out")
					assert.LessOrEqual(t, delay, ttl+ttl/3, "the dead holder kept its permit longer than a TTL and a renew interval")
					assert.InDelta(t, ttl-after, delay, float64(2*time.Millisecond), "not taken when the last renewal ran out")
					tokens = append(tokens, r.p.Token)
					defer func() { require.NoError(t, waiters[i].Release(ctx, r.p)) }()
				}
				require.Len(t, tokens, 2)
				assert.NotEqual(t, tokens[0], tokens[1], "each waiter has its own token")
				for _, tok := range tokens {
					for _, p := range held {
						assert.Greater(t, tok, p.Token, "a returned permit is taken with a fresh, greater token")
					}
				}
				assert.Equal(t, strconv.FormatUint(max(tokens[0], tokens[1]), 10), mr.HGet("rc:{n}:sem-fence", "n"),
					"one token per waiter's acquire: none handed out after the waiters'")
				av, acq := expCounts(t, waiters[0])
				assert.Equal(t, [2]int64{0, 2}, [2]int64{av, acq}, "the waiters hold both permits")
			})
		})
	}
}

// crashMessages returns how many messages ps received since the last call:
// it reads until nothing more arrives within a millisecond of bubble time.
func crashMessages(t *testing.T, ps *redis.PubSub) int {
	t.Helper()
	n := 0
	for {
		msg, err := ps.ReceiveTimeout(context.Background(), time.Millisecond)
		var nerr interface{ Timeout() bool }
		if errors.As(err, &nerr) && nerr.Timeout() {
			return n
		}
		require.NoError(t, err)
		if _, ok := msg.(*redis.Message); ok {
			n++
		}
	}
}

// A permit with a fixed lease that nobody releases comes back when its
// lease ends, and a waiter takes it then, woken by the soonest expiry the
// acquire script told it of: no message is published (a subscriber on the
// channel hears none), and the waiter's poll interval is an hour. So it is
// for a waiter that arrives in the lease's last millisecond, when the lease
// has less than a millisecond left (after the holder's Lost closed,
// lease.Margin before the end).
func TestFixedLeasePermitReturnsWithoutMessage(t *testing.T) {
	const fixed = 5 * time.Second
	lostAt := fixed - lease.Margin(fixed) // when the holder's Lost closes
	for _, arrive := range []time.Duration{0, fixed / 2, fixed - 500*time.Microsecond} {
		t.Run(fmt.Sprintf("arriving at %v", arrive), func(t *testing.T) {
			locktest.InBubble(t, 2, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
				ctx := context.Background()
				holder := rsemaphore.NewExpirable(ps[0].C, "n")
				waiter := rsemaphore.NewExpirable(ps[1].C, "n", rsemaphore.WithMaxPollInterval(time.Hour))
				require.NoError(t, holder.SetPermits(ctx, 1))
				monitor := ps[0].RDB.PSubscribe(ctx, "rc:{n}:sem-ch*") // the name's and every Client's
				defer monitor.Close()
				_, err := monitor.Receive(ctx) // the confirmation
				require.NoError(t, err)

				start := time.Now()
				p := expAcquire(t, holder, rsemaphore.AcquireOptions{Lease: fixed})
				until := func(d time.Duration) { time.Sleep(d - time.Since(start)) } // bubble time start+d
				var done <-chan crashResult
				arriveNow := func() {
					until(arrive)
					done = crashAcquire(waiter, rsemaphore.AcquireOptions{})
					crashPending(t, done)
					hub, err := ps[1].C.Hub()
					require.NoError(t, err)
					assert.Equal(t, 1, hub.Stats().Waiters, "the waiter is not subscribed: a message could not have woken it anyway")
				}
				if arrive < lostAt {
					arriveNow()
				}
				until(lostAt - time.Millisecond)
				synctest.Wait()
				assert.False(t, locktest.IsClosed(p.Lost()), "Lost closed more than the margin before the lease ended")
				until(lostAt)
				synctest.Wait()
				assert.True(t, locktest.IsClosed(p.Lost()), "Lost not closed the margin before the fixed lease ended")
				if done == nil {
					arriveNow()
				}
				if arrive < fixed-time.Millisecond {
					until(fixed - time.Millisecond)
					crashPending(t, done)
				}

				r := <-done
				require.NoError(t, r.err)
				waited := r.at.Sub(start)
				t.Logf("the waiter acquired %v after the holder", waited)
				assert.True(t, locktest.IsClosed(p.Lost()))
				assert.GreaterOrEqual(t, waited, fixed, "the waiter took the permit before the lease ended in Redis")
				assert.LessOrEqual(t, waited, fixed+2*time.Millisecond, "the waiter outwaited the lease")
				assert.Zero(t, crashMessages(t, monitor), "a message was published")

				err = holder.Release(ctx, p)
				assert.ErrorIs(t, err, redcoord.ErrLeaseLost)
				third := crashAcquire(holder, rsemaphore.AcquireOptions{}) // registers: the permit is held
				crashPending(t, third)
				require.NoError(t, waiter.Release(ctx, r.p))
				assert.Equal(t, 1, crashMessages(t, monitor), "the monitor hears a release's wake: the test can fail")
				r3 := <-third
				require.NoError(t, r3.err)
				require.NoError(t, holder.Release(ctx, r3.p))
			})
		})
	}
}

// A holder cut off from Redis (its connections closed, its Client and
// watchdog still running) must see its permit lost no later than Redis
// frees it for another holder. Here the permit is taken at 5s, between two
// ticks of a watchdog that already runs (it keeps a permit of another
// name, taken at 0), and the holder is cut off at once: Redis frees the
// permit at 35s, a TTL after it was taken.
//
// Until the watchdog marks a lease lost by the time it runs out, rather
// than at the first tick after, this fails: Lost closes at the tick at
// 40s, 5s after the waiter took the permit.
func TestCutOffHolderLosesPermitFirst(t *testing.T) {
	locktest.InBubble(t, 2, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		anchor := rsemaphore.NewExpirable(ps[0].C, "anchor")
		require.NoError(t, anchor.SetPermits(ctx, 1))
		holder, waiter := rsemaphore.NewExpirable(ps[0].C, "n"), rsemaphore.NewExpirable(ps[1].C, "n")
		require.NoError(t, holder.SetPermits(ctx, 1))
		start := time.Now()
		expAcquire(t, anchor, rsemaphore.AcquireOptions{}) // the watchdog ticks at 10s, 20s, ...
		time.Sleep(5 * time.Second)
		p := expAcquire(t, holder, rsemaphore.AcquireOptions{})
		_ = ps[0].RDB.Close() // cut off: every renewal fails from now on
		lost := make(chan time.Time, 1)
		go func() {
			select {
			case <-p.Lost():
				lost <- time.Now()
			case <-time.After(time.Minute):
				close(lost)
			}
		}()
		time.Sleep(time.Second)
		done := crashAcquire(waiter, rsemaphore.AcquireOptions{})

		r := <-done
		require.NoError(t, r.err)
		defer func() { require.NoError(t, waiter.Release(ctx, r.p)) }()
		t.Logf("the waiter took the permit at %v", r.at.Sub(start))
		assert.Equal(t, 35*time.Second, r.at.Sub(start), "Redis freed the permit a TTL after it was taken")
		synctest.Wait()
		select {
		case at := <-lost:
			t.Logf("the holder's Lost closed at %v", at.Sub(start))
		default:
			at, ok := <-lost
			require.True(t, ok, "Lost never closed")
			t.Errorf("the holder's Lost closed at %v, %v after the waiter took the permit", at.Sub(start), at.Sub(r.at))
		}
	})
}
