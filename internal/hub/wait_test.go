package hub

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/errs"
)

// TestWaitWokenByPublish uses a poll interval far longer than the test may
// run, so Wait can only return through the message.
func TestWaitWokenByPublish(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *server) {
		rdb := newClient(t, srv)
		h := newHub(t, rdb, WithPollInterval(time.Hour))
		ctx, cancel := context.WithTimeout(testCtx(t), patience)
		defer cancel()

		checked := make(chan struct{}, 1)
		check := func(ctx context.Context) (bool, error) {
			v, err := rdb.Get(ctx, "flag").Result()
			select {
			case checked <- struct{}{}:
			default:
			}
			return v == "up", ignoreNil(err)
		}
		published := make(chan error, 1)
		go func() {
			<-checked // Wait has subscribed and seen the flag down
			if err := rdb.Set(ctx, "flag", "up", 0).Err(); err != nil {
				published <- err
				return
			}
			published <- rdb.Publish(ctx, "flag:ch", One()).Err()
		}()
		require.NoError(t, h.Wait(ctx, "flag:ch", check))
		require.NoError(t, <-published)
		assert.Equal(t, 0, h.Stats().Waiters, "Wait leaves nothing registered")
	})
}

func TestWaitPolls(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *server) {
		h := newHub(t, newClient(t, srv), WithPollInterval(time.Millisecond))
		calls := 0
		err := h.Wait(testCtx(t), "never:published", func(context.Context) (bool, error) {
			calls++
			return calls == 3, nil
		})
		require.NoError(t, err)
		assert.Equal(t, 3, calls)
	})
}

func TestWaitEnds(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *server) {
		h := newHub(t, newClient(t, srv), WithPollInterval(time.Hour))

		// ctx cancelled while waiting.
		ctx, cancel := context.WithCancel(testCtx(t))
		err := h.Wait(ctx, "ch", func(context.Context) (bool, error) {
			cancel()
			return false, nil
		})
		assert.ErrorIs(t, err, context.Canceled)

		// check's error is returned as it is.
		boom := errors.New("boom")
		err = h.Wait(testCtx(t), "ch", func(context.Context) (bool, error) { return false, boom })
		assert.Equal(t, boom, err)

		assert.ErrorIs(t, h.Wait(testCtx(t), "ch", nil), errs.ErrInvalidArgument)

		// The Hub closing ends a Wait with ErrClosed.
		waiting := make(chan struct{})
		go func() {
			<-waiting
			_ = h.Close(testCtx(t))
		}()
		err = h.Wait(testCtx(t), "ch", func(context.Context) (bool, error) {
			select {
			case <-waiting:
			default:
				close(waiting)
			}
			return false, nil
		})
		assert.ErrorIs(t, err, errs.ErrClosed)
	})
}
