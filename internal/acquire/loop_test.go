package acquire_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/acquire"
	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/hub"
	"github.com/redcoord/redcoord/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// fake is a primitive that is free once free is closed, a acquire.Trier
// whose acquiring try gets its number; it records its tries on the
// bubble's clock and whether Leave ran with a live context.
type fake struct {
	free   chan struct{}
	hint   time.Duration
	fail   error // every try fails with it, when set
	tries  []time.Duration
	start  time.Time
	left   int
	leftOK bool
}

func newFake(hint time.Duration) *fake {
	return &fake{free: make(chan struct{}), hint: hint, start: time.Now()}
}

func (f *fake) Try(ctx context.Context, _ acquire.Wake) (int, acquire.Attempt, error) {
	f.tries = append(f.tries, time.Since(f.start))
	if f.fail != nil {
		return 0, acquire.Attempt{}, f.fail
	}
	select {
	case <-f.free:
		return len(f.tries), acquire.Attempt{Acquired: true}, nil
	default:
		return 0, acquire.Attempt{Hint: f.hint}, nil
	}
}

func (f *fake) Leave(ctx context.Context) error {
	f.left++
	f.leftOK = ctx.Err() == nil
	return nil
}

func (f *fake) spec() acquire.Spec {
	return acquire.Spec{Channel: "ch", Mode: acquire.ClientQueue, Behind: true}
}

// acquire runs acquire.Acquire with f, checking that an acquire returns what
// its acquiring try got.
func (f *fake) acquire(ctx context.Context, cfg acquire.Config, s acquire.Spec) error {
	r, err := acquire.Acquire(ctx, cfg, s, f)
	if err == nil && r.Got != len(f.tries) {
		return fmt.Errorf("got %d, want the acquiring try's number %d", r.Got, len(f.tries))
	}
	if err == nil && len(f.tries) > 1 && !r.Waited {
		return fmt.Errorf("not waited after %d tries", len(f.tries))
	}
	return err
}

// withHub returns, in a bubble, a client of a miniredis on the bubble's
// clock, a Hub on it, and a wait Config that uses the Hub and polls once an
// hour; all are closed when the test ends.
func withHub(t *testing.T) (*redis.Client, *hub.Hub, acquire.Config) {
	m, opts := redistest.Bubble()
	t.Cleanup(m.Close)
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	h, err := hub.New(rdb)
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	cfg := acquire.Config{Hub: func() (*hub.Hub, error) { return h, nil }, MaxPoll: time.Hour,
		Logger: slog.New(slog.DiscardHandler)}
	return rdb, h, cfg
}

func polling(max time.Duration, done <-chan struct{}) acquire.Config {
	return acquire.Config{MaxPoll: max, Done: done, Logger: slog.New(slog.DiscardHandler)}
}

// Without a Hub the loop polls every min(hint + 1ms, MaxPoll).
func TestPollsAtHintOrMax(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(50 * time.Millisecond)
		time.AfterFunc(120*time.Millisecond, func() { close(f.free) })
		require.NoError(t, f.acquire(context.Background(), polling(time.Second, nil), f.spec()))
		assert.Equal(t, []time.Duration{0, 51 * time.Millisecond, 102 * time.Millisecond, 153 * time.Millisecond}, f.tries)
		assert.Zero(t, f.left, "an acquired wait leaves nothing")

		g := newFake(time.Hour)
		time.AfterFunc(2500*time.Millisecond, func() { close(g.free) })
		require.NoError(t, g.acquire(context.Background(), polling(time.Second, nil), g.spec()))
		assert.Equal(t, []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second}, g.tries)
	})
}

func TestContextEndsWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(time.Hour)
		ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
		defer cancel()
		err := f.acquire(ctx, polling(time.Second, nil), f.spec())
		assert.ErrorIs(t, err, errs.ErrNotAcquired)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 1, f.left)
		assert.True(t, f.leftOK, "Leave must run with a live context")
		assert.Len(t, f.tries, 3)
	})
}

func TestClientCloseEndsWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(time.Hour)
		done := make(chan struct{})
		time.AfterFunc(1500*time.Millisecond, func() { close(done) })
		err := f.acquire(context.Background(), polling(time.Second, done), f.spec())
		assert.ErrorIs(t, err, errs.ErrNotAcquired)
		assert.ErrorIs(t, err, errs.ErrClosed)
		assert.Equal(t, 1, f.left)
	})
}

func TestOnceAndTryErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(time.Hour)
		s := f.spec()
		s.Once = true
		assert.ErrorIs(t, f.acquire(context.Background(), polling(time.Second, nil), s), acquire.ErrBusy)
		assert.Zero(t, f.left, "a busy attempt changed nothing")

		boom := errors.New("boom")
		f.fail = boom
		assert.ErrorIs(t, f.acquire(context.Background(), polling(time.Second, nil), s), boom)
		assert.Equal(t, 1, f.left, "a failed try may have been applied: Leave runs")

		f.fail = errs.ErrWrongType
		assert.ErrorIs(t, f.acquire(context.Background(), polling(time.Second, nil), s), errs.ErrWrongType)
		assert.Equal(t, 1, f.left, "a refused try changed nothing: no Leave")
	})
}

// With a Hub, a message wakes the waiter at once; without one, the timer.
func TestWokenByMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rdb, h, cfg := withHub(t)

		f := newFake(time.Hour)
		published := make(chan error)
		go func() {
			time.Sleep(3 * time.Second)
			close(f.free)
			published <- rdb.Publish(context.Background(), "ch", hub.One()).Err()
		}()
		require.NoError(t, f.acquire(context.Background(), cfg, f.spec()))
		require.NoError(t, <-published) // the publisher ends inside the bubble
		assert.Equal(t, []time.Duration{0, 0, 3 * time.Second}, f.tries, "try, subscribe and try, woken try")
		assert.Zero(t, h.Stats().Waiters)
	})
}

// A second waiter of the same Client does not overtake the first: it joins
// without trying, and the next release wakes the first.
func TestNewWaiterJoinsQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rdb, h, cfg := withHub(t)

		first := newFake(time.Hour)
		go func() { assert.NoError(t, first.acquire(context.Background(), cfg, first.spec())) }()
		synctest.Wait()
		second := newFake(time.Hour)
		close(second.free) // it would win if it tried
		got := make(chan error)
		go func() { got <- second.acquire(context.Background(), cfg, second.spec()) }()
		synctest.Wait()
		assert.Empty(t, second.tries, "the newcomer did not try ahead of the waiter")
		assert.Equal(t, 2, h.Stats().Waiters)

		close(first.free)
		rdb.Publish(context.Background(), "ch", hub.One()) // wakes the longest waiting
		synctest.Wait()
		assert.Len(t, first.tries, 3, "the first waiter was woken and acquired")
		assert.Empty(t, second.tries)
		rdb.Publish(context.Background(), "ch", hub.One())
		require.NoError(t, <-got)
		assert.Len(t, second.tries, 1)
	})
}

// stuck is a fake whose try number at blocks until release is closed (or
// its ctx ends): a try whose reply was lost, waiting for the read timeout.
type stuck struct {
	*fake
	at      int
	release chan struct{}
}

func (s *stuck) Try(ctx context.Context, w acquire.Wake) (int, acquire.Attempt, error) {
	if len(s.tries)+1 == s.at {
		select {
		case <-s.release:
		case <-ctx.Done():
		}
	}
	return s.fake.Try(ctx, w)
}

// A newcomer does not join a Client's waiter whose wake is pending: that
// wake's release took the Client's registration, and the waiter, stuck in
// a try, cannot register it again soon. The newcomer tries itself (and
// would register the Client), rather than wait for a wake nobody sends.
func TestNewWaiterTriesWhenTheWaitersWakeIsPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rdb, h, cfg := withHub(t)
		ctx, cancel := context.WithCancel(context.Background())
		first := &stuck{fake: newFake(time.Hour), at: 2, release: make(chan struct{})}
		firstDone := make(chan struct{})
		go func() {
			defer close(firstDone)
			_, err := acquire.Acquire(ctx, cfg, first.spec(), first)
			assert.ErrorIs(t, err, context.Canceled)
		}()
		synctest.Wait() // tried, subscribed, stuck in its second try
		require.Len(t, first.tries, 1)
		require.NoError(t, rdb.Publish(context.Background(), "ch", hub.One()).Err())
		synctest.Wait()
		assert.Zero(t, h.Unwoken("ch"), "its wake is pending")

		second := newFake(time.Hour)
		close(second.free)
		got := make(chan error, 1)
		go func() { got <- second.acquire(context.Background(), cfg, second.spec()) }()
		select {
		case err := <-got:
			require.NoError(t, err)
		case <-time.After(time.Minute):
			t.Fatal("the newcomer waited behind a waiter whose wake was pending")
		}
		assert.Len(t, second.tries, 1, "it tried at once")
		cancel()
		<-firstDone
	})
}

// A broadcast wait on a channel other waiters of the Client already share
// tries again after registering: a wake-all message in the window between
// its first try and its registration reached only the others.
func TestBroadcastWaitRetriesOnSharedChannel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rdb, _, cfg := withHub(t)
		spec := acquire.Spec{Channel: "ch", Mode: acquire.Broadcast}

		first := newFake(time.Hour)
		firstDone := make(chan error, 1)
		go func() { firstDone <- first.acquire(context.Background(), cfg, spec) }()
		stays := newFake(time.Hour) // keeps the channel shared: its wait never succeeds
		sctx, cancel := context.WithCancel(context.Background())
		staysDone := make(chan error, 1)
		go func() { staysDone <- stays.acquire(sctx, cfg, spec) }()
		synctest.Wait() // both on the channel

		second := newFake(time.Hour)
		var once sync.Once
		opened := func() { // the primitive opens, and wakes everyone, just after second's first try
			close(first.free)
			close(second.free)
			require.NoError(t, rdb.Publish(context.Background(), "ch", hub.All()).Err())
			synctest.Wait() // the Hub has dispatched it: to the first waiter only
		}
		tried := &tryHook{fake: second, after: func() { once.Do(opened) }}
		require.NoError(t, func() error { _, err := acquire.Acquire(context.Background(), cfg, spec, tried); return err }())
		require.NoError(t, <-firstDone)
		assert.Len(t, second.tries, 2, "the broadcast waiter tried again after registering, at once")
		assert.Equal(t, time.Duration(0), second.tries[1])
		cancel()
		assert.ErrorIs(t, <-staysDone, context.Canceled)
	})
}

// tryHook is a fake whose first try runs after() once it has tried.
type tryHook struct {
	*fake
	after func()
}

func (h *tryHook) Try(ctx context.Context, w acquire.Wake) (int, acquire.Attempt, error) {
	n, a, err := h.fake.Try(ctx, w)
	if len(h.fake.tries) == 1 {
		h.after()
	}
	return n, a, err
}
