package redcoord_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/obs"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
)

// events collects what an observer hears.
type events struct {
	mu  sync.Mutex
	all []redcoord.Event
}

func (e *events) add(ev redcoord.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

func (e *events) of(k redcoord.EventKind) []redcoord.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []redcoord.Event
	for _, ev := range e.all {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

// The observer hears an acquire and its wait, a release and how long the
// hold lasted, a wait that ended with its context, a lost lease, and the
// watchdog's ticks.
func TestObserver(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		var ev events
		c := locktest.NewClient(t, rdb, redcoord.WithObserver(ev.add), redcoord.WithLeaseTTL(300*time.Millisecond))
		m := rlock.New(c, "obs")
		require.NoError(t, m.Lock(ctx))
		time.Sleep(150 * time.Millisecond) // past a watchdog tick
		require.NoError(t, m.Unlock(ctx))
		acq := ev.of(redcoord.Acquired)
		require.Len(t, acq, 1)
		assert.Equal(t, "rlock", acq[0].Primitive)
		assert.Equal(t, "obs", acq[0].Name)
		assert.False(t, acq[0].Waited, "a free lock is taken without a wait")
		assert.Empty(t, ev.of(redcoord.Waiting))
		rel := ev.of(redcoord.Released)
		require.Len(t, rel, 1)
		assert.GreaterOrEqual(t, rel[0].Held, 150*time.Millisecond)
		ren := ev.of(redcoord.Renewed)
		require.NotEmpty(t, ren, "a watchdog tick")
		assert.Equal(t, 1, ren[0].Count)
		assert.NoError(t, ren[0].Err)

		other := rlock.New(locktest.NewClient(t, rdb), "obs")
		require.NoError(t, other.Lock(ctx))
		wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		require.Error(t, m.Lock(wctx))
		ended := ev.of(redcoord.WaitEnded)
		require.Len(t, ended, 1)
		assert.ErrorIs(t, ended[0].Err, context.DeadlineExceeded)
		assert.GreaterOrEqual(t, ended[0].Wait, 50*time.Millisecond)
		assert.True(t, ended[0].Waited)
		waiting := ev.of(redcoord.Waiting)
		require.Len(t, waiting, 1, "the busy lock began a wait")
		assert.Equal(t, "obs", waiting[0].Name)

		// A wait that ends with the lock: Waiting, then Acquired with Waited.
		got := make(chan error, 1)
		go func() { got <- m.Lock(ctx) }()
		locktest.Eventually(t, func() bool { return len(ev.of(redcoord.Waiting)) == 2 }, "the second wait began")
		require.NoError(t, other.Unlock(ctx))
		require.NoError(t, <-got)
		acq = ev.of(redcoord.Acquired)
		require.Len(t, acq, 2)
		assert.True(t, acq[1].Waited)
		require.NoError(t, m.Unlock(ctx))

		require.NoError(t, m.Lock(ctx))
		require.NoError(t, rdb.Del(ctx, "rc:{obs}:lock").Err())
		select {
		case <-m.Lost():
		case <-time.After(10 * time.Second):
			t.Fatal("not lost")
		}
		lost := ev.of(redcoord.LeaseLost)
		require.Len(t, lost, 1)
		assert.Equal(t, "obs", lost[0].Name)
		assert.Equal(t, "lease lost", redcoord.LeaseLost.String())

		// Held counts from the acquire, not from an Extend.
		x := rlock.New(c, "obs-extend")
		require.NoError(t, x.Lock(ctx))
		time.Sleep(100 * time.Millisecond)
		require.NoError(t, x.Extend(ctx, time.Minute))
		require.NoError(t, x.Unlock(ctx))
		rel = ev.of(redcoord.Released)
		require.NotEmpty(t, rel)
		assert.Equal(t, "obs-extend", rel[len(rel)-1].Name)
		assert.GreaterOrEqual(t, rel[len(rel)-1].Held, 100*time.Millisecond)

		_, err := redcoord.New(rdb, redcoord.WithObserver(nil))
		assert.ErrorIs(t, err, redcoord.ErrInvalidArgument)
	})
}

// Each EventKind has the value of the internal event it is made from.
func TestEventKindValues(t *testing.T) {
	for k, o := range map[redcoord.EventKind]obs.Kind{
		redcoord.Acquired: obs.Acquired, redcoord.WaitEnded: obs.WaitEnded, redcoord.Released: obs.Released,
		redcoord.LeaseLost: obs.LeaseLost, redcoord.Renewed: obs.Renewed, redcoord.HubReconnected: obs.HubReconnected,
		redcoord.Waiting: obs.Waiting, redcoord.HubMoved: obs.HubMoved, redcoord.Retrying: obs.Retrying,
		redcoord.RateAdmitted: obs.RateAdmitted, redcoord.RateWaited: obs.RateWaited, redcoord.RateRefused: obs.RateRefused,
	} {
		assert.Equal(t, uint8(o), uint8(k), k.String())
		assert.NotEqual(t, "unknown", k.String())
	}
}
