package rsemaphore_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rsemaphore"
)

// A release of 1 permit wakes the Client wp, whose waiter of 1 permit gives
// up the wake: while the wake is on its way (wp's pub/sub replies are
// late) its context ends, or it receives the wake and its try fails. Its
// leave is not wp's last: another waiter of wp waits too. When that one
// asks for more than is free, the wake goes on at once to the next
// registered process that fits, op; when it fits, wp keeps the wake and
// that waiter takes the permit at once, and op stays registered. Nobody
// waits for a poll, and wp ends registered for the waiter left, if any.
func TestGivenUpWakeGoesOn(t *testing.T) {
	for _, tc := range []struct {
		name     string
		received bool  // the waiter received the wake, and its try failed
		next     int64 // what wp's other waiter asks for
		kept     bool  // it takes the permit, before op
	}{
		{"in flight, to the next process", false, 2, false},
		{"in flight, to the next local waiter that fits", false, 1, true},
		{"received, to the next process", true, 2, false},
		{"received, to the next local waiter that fits", true, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				ps := semProcs(t, 3, nil)
				hp, wp, op := ps[0], ps[1], ps[2]
				faults := &locktest.ScriptFaults{}
				wp.RDB.AddHook(faults)
				s := rsemaphore.New(hp.C, "n")
				require.NoError(t, s.SetPermits(ctx, 2))
				require.NoError(t, s.Acquire(ctx, 2))

				wctx, cancelFirst := context.WithCancel(ctx)
				defer cancelFirst()
				first := semAsync(wctx, rsemaphore.New(wp.C, "n"), 1)
				synctest.Wait()
				time.Sleep(time.Millisecond) // op registers after wp: the release wakes wp
				other := semAsync(ctx, rsemaphore.New(op.C, "n"), 1)
				synctest.Wait()
				next := semAsync(ctx, rsemaphore.New(wp.C, "n"), tc.next)
				synctest.Wait()
				require.Equal(t, int64(2), semRegistered(t, hp))

				const late = 10 * time.Millisecond
				if tc.received {
					faults.FailBefore("sem_acquire") // the woken waiter's try
				} else {
					wp.Faults.DelaySubscribers(late)
				}
				start := time.Now()
				require.NoError(t, s.Release(ctx, 1)) // wakes wp, for 1
				if tc.received {
					require.ErrorIs(t, semResult(t, first), locktest.ErrInjected)
				} else {
					cancelFirst()
					require.ErrorIs(t, semResult(t, first), context.Canceled)
				}
				winner, loser := other, next
				if tc.kept {
					winner, loser = next, other
				}
				require.NoError(t, semResult(t, winner))
				assert.Equal(t, start, time.Now(), "the permit was taken at once, not after a poll")
				semPending(t, loser)
				assert.Zero(t, semAvailable(t, s))
				wp.Faults.DelaySubscribers(0)
				time.Sleep(late) // a late wake has reached wp
				synctest.Wait()
				semPending(t, loser)
				assert.Equal(t, int64(1), semRegistered(t, hp), "the loser's Client is registered")
			})
		})
	}
}

// The same with an ExpirableSemaphore, whose every waiter asks for one
// permit: when a waiter of wp gives up wp's wake and another waiter of wp
// remains, that one fits, and takes the permit as soon as the wake reaches
// wp (at once when the giver had received it); op stays registered.
func TestExpirableGivenUpWakeStaysLocal(t *testing.T) {
	for _, received := range []bool{false, true} {
		t.Run(map[bool]string{false: "in flight", true: "received"}[received], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				ps := semProcs(t, 3, nil)
				hp, wp, op := ps[0], ps[1], ps[2]
				faults := &locktest.ScriptFaults{}
				wp.RDB.AddHook(faults)
				s := rsemaphore.NewExpirable(hp.C, "n")
				require.NoError(t, s.SetPermits(ctx, 1))
				p, err := s.Acquire(ctx, rsemaphore.AcquireOptions{})
				require.NoError(t, err)
				acquire := func(ctx context.Context, c *redcoord.Client) <-chan error {
					ch := make(chan error, 1)
					go func() {
						_, err := rsemaphore.NewExpirable(c, "n").Acquire(ctx, rsemaphore.AcquireOptions{})
						ch <- err
					}()
					return ch
				}

				wctx, cancelFirst := context.WithCancel(ctx)
				defer cancelFirst()
				first := acquire(wctx, wp.C)
				synctest.Wait()
				time.Sleep(time.Millisecond) // op registers after wp: the release wakes wp
				other := acquire(ctx, op.C)
				synctest.Wait()
				next := acquire(ctx, wp.C)
				synctest.Wait()
				require.Equal(t, int64(2), hp.RDB.ZCard(ctx, "rc:{n}:xsem-waiters").Val())

				const late = 10 * time.Millisecond
				if received {
					faults.FailBefore("xsem_acquire") // the woken waiter's try
				} else {
					wp.Faults.DelaySubscribers(late)
				}
				start := time.Now()
				require.NoError(t, s.Release(ctx, p)) // wakes wp, for 1
				if received {
					require.ErrorIs(t, semResult(t, first), locktest.ErrInjected)
				} else {
					cancelFirst()
					require.ErrorIs(t, semResult(t, first), context.Canceled)
				}
				require.NoError(t, semResult(t, next))
				if received {
					assert.Equal(t, start, time.Now(), "the permit was taken at once")
				} else {
					assert.Equal(t, start.Add(late), time.Now(), "the permit was taken as the wake reached wp")
				}
				semPending(t, other)
				wp.Faults.DelaySubscribers(0)
				assert.Equal(t, []string{op.C.ID()}, hp.RDB.ZRange(ctx, "rc:{n}:xsem-waiters", 0, -1).Val(),
					"op is still registered")
			})
		})
	}
}
