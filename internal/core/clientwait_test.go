package core_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/acquire"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/scripts"
)

// noRegistrant registers nothing; a test that needs no drop fails on one.
type noRegistrant struct{ t *testing.T }

func (r noRegistrant) Beat() *lease.Heartbeat {
	r.t.Error("no try registered: no heartbeat")
	return nil
}
func (r noRegistrant) Drop(context.Context) { r.t.Error("nothing registered: no drop") }

// While the last waiter on a key, a lock's, drops the Client's
// registration by its leave, a new acquire on that key waits for the drop, no longer than its context; an
// acquire on another key does not wait, and neither does one after the
// drop ended.
func TestEnterWaitsForTheDropOfItsKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := &core.Session{} // woken by pub/sub; its hub is never made
		r := noRegistrant{t}
		enter := func(ctx context.Context, key string, w core.Weight) (*core.ClientWaiter, error) {
			return core.EnterClientWaiter(ctx, new(core.ClientWaiter), s, key, "ch", w, r)
		}
		sem, err := enter(ctx, "a", core.Permits(1))
		require.NoError(t, err)
		cw, err := enter(ctx, "a", core.OneHold())
		require.NoError(t, err)
		require.True(t, cw.Counted(), "a lock's acquire counts in at once where others wait")
		assert.EqualValues(t, 1, sem.Leaving(), "a semaphore's acquire counts out at Exit")
		sem.Exit()
		require.Zero(t, cw.Leaving(), "the last waiter")
		assert.False(t, s.ClientWaits.Waiting("a"), "nobody waits while the drop runs")

		other, err := enter(ctx, "b", core.Permits(1))
		require.NoError(t, err, "another key does not wait")
		other.Exit()
		assert.False(t, s.ClientWaits.Waiting("b"))

		sctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err = enter(sctx, "a", core.Permits(2))
		require.ErrorIs(t, err, errs.ErrNotAcquired)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 50*time.Millisecond, time.Since(start))
		_, err = enter(sctx, "a", core.OneHold())
		require.ErrorIs(t, err, context.DeadlineExceeded)

		entered := make(chan *core.ClientWaiter, 1)
		go func() {
			cw, err := enter(ctx, "a", core.Permits(1))
			assert.NoError(t, err)
			entered <- cw
		}()
		synctest.Wait()
		require.Empty(t, entered, "the same key waits for the drop")
		cw.Exit()
		next := <-entered
		assert.True(t, next.Counted())
		assert.True(t, s.ClientWaits.Waiting("a"))
		joined, err := enter(ctx, "a", core.OneHold())
		require.NoError(t, err)
		assert.True(t, joined.Counted(), "a lock's acquire counts in at once where others wait")
		assert.EqualValues(t, 1, next.Least())
		reg, least := joined.ModeBehind(acquire.Wake{})
		assert.Equal(t, scripts.Keep, reg)
		assert.EqualValues(t, 1, least)
		joined.Exit()
		reg = next.Mode(acquire.Wake{})
		assert.Equal(t, scripts.Register, reg, "the Client's only waiter")
		next.Exit()
		assert.False(t, s.ClientWaits.Waiting("a"))
		joined, err = enter(ctx, "a", core.OneHold())
		require.NoError(t, err)
		assert.False(t, joined.Counted(), "nobody waits: a lock's acquire counts nothing yet")
	})
}

// Least is the fewest permits the Client's other waiters on the key ask
// for: a waiter's own request is not among them, another of the same
// size is.
func TestLeastCountsOthersOnly(t *testing.T) {
	ctx := context.Background()
	s := &core.Session{}
	enter := func(n int64) *core.ClientWaiter {
		cw, err := core.EnterClientWaiter(ctx, new(core.ClientWaiter), s, "k", "ch", core.Permits(n), noRegistrant{t})
		require.NoError(t, err)
		return cw
	}
	three := enter(3)
	assert.Zero(t, three.Least(), "alone")
	two, other := enter(2), enter(2)
	assert.EqualValues(t, 2, three.Least())
	assert.EqualValues(t, 2, two.Least(), "another of the same size")
	other.Exit()
	assert.EqualValues(t, 3, two.Least())
	assert.EqualValues(t, 2, three.Leaving(), "the leave keeps the registration for two")
	three.Exit()
	assert.Zero(t, two.Leaving(), "the last waiter")
	two.Exit()
	assert.False(t, s.ClientWaits.Waiting("k"))
}

// dropCounter counts the drops of the Client's registration; its
// heartbeats renew nothing.
type dropCounter struct{ drops int }

func (r *dropCounter) Beat() *lease.Heartbeat {
	hb := lease.NewHeartbeat(nil, lease.Renewal{})
	hb.Stop()
	return hb
}
func (r *dropCounter) Drop(context.Context) { r.drops++ }

// Two blocked acquires of one semaphore in one Client: a's try, sent while
// it waited alone (Register), takes a permit, and the script unregisters
// the Client; b came in meanwhile, and its try (Keep, for a) reaches Redis
// after a's, takes a permit too and registers the Client for a. b's reply
// is read first. Redis now has a registration that no waiter of the Client
// stands behind: the last of them to exit drops it, or it outlives them by
// a lease TTL without a heartbeat, a release within it spends a wake on
// the Client, and a fair Acquire on the name is refused meanwhile.
func TestSemaphoreLastWaiterDropsARegistrationKeptByAnother(t *testing.T) {
	ctx := context.Background()
	s := &core.Session{} // woken by pub/sub; its hub cannot be made, so no wake is delivered
	r := &dropCounter{}
	enter := func() *core.ClientWaiter {
		cw, err := core.EnterClientWaiter(ctx, new(core.ClientWaiter), s, "k", "ch", core.Permits(1), r)
		require.NoError(t, err)
		return cw
	}
	a := enter()
	regA := a.Mode(acquire.Wake{})
	require.Equal(t, scripts.Register, regA, "a waits alone")
	b := enter()
	regB, least := b.ModeBehind(acquire.Wake{})
	require.Equal(t, scripts.Keep, regB)
	require.EqualValues(t, 1, least)
	require.NoError(t, b.Sent(ctx, regB, time.Now(), true), "b took a permit, keeping the registration for a")
	require.NoError(t, a.Sent(ctx, regA, time.Now(), true), "a took one alone; Redis ran it before b's")
	a.Exit()
	b.Exit()
	assert.False(t, s.ClientWaits.Waiting("k"))
	assert.Equal(t, 1, r.drops, "the last waiter drops the registration b's try made")
}
