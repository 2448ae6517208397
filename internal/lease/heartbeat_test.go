package lease_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/internal/scripts"
)

// A renewal sent before the waiter registered again finds it gone; its
// reply comes after the new registration's Watch. The heartbeat still
// renews the new registration.
func TestHeartbeatOutlivesStaleRenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m, opts := redistest.Bubble()
		defer m.Close()
		rdb := redis.NewClient(opts)
		defer rdb.Close()
		held := &heldReplies{}
		rdb.AddHook(held)
		const ttl = 3 * time.Second
		w := lease.New(rdb, ttl, slog.New(slog.NewTextHandler(io.Discard, nil)), lease.Replicas{}, nil)
		defer w.Close(ctx)

		registry := scripts.Lock{Waiters: "t:{n}:waiters"}
		register := func() time.Time {
			now := time.Now()
			z := redis.Z{Score: float64(now.Add(ttl).UnixMilli()), Member: "c:1:1"}
			require.NoError(t, rdb.ZAdd(ctx, registry.Waiters, z).Err())
			return now
		}
		script, keys, args := registry.Beat("c:1:1", ttl)
		require.NoError(t, script.Load(ctx, rdb).Err()) // a renewal is one EVALSHA
		hb := lease.NewHeartbeat(w, lease.Renewal{Script: script, Keys: keys, Args: args})
		require.NoError(t, hb.Watch(register()))
		defer hb.Stop()

		require.NoError(t, rdb.ZRem(ctx, registry.Waiters, "c:1:1").Err()) // a release woke it
		release := held.hold()
		time.Sleep(w.Interval()) // a renewal finds it gone; its reply is held
		synctest.Wait()
		require.NoError(t, hb.Watch(register())) // its next try registered it again
		release()
		synctest.Wait()
		assert.Equal(t, 1, w.Len(), "the new registration is watched")

		time.Sleep(ttl) // past the registration's deadline, unless renewed
		score, err := rdb.ZScore(ctx, registry.Waiters, "c:1:1").Result()
		require.NoError(t, err)
		assert.Greater(t, score, float64(time.Now().UnixMilli()), "the new registration was not renewed")
	})
}

// heldReplies holds the replies of the next pipeline after hold, until
// the function hold returned is called.
type heldReplies struct {
	mu   sync.Mutex
	gate chan struct{} // nil: nothing held
}

func (h *heldReplies) hold() (release func()) {
	gate := make(chan struct{})
	h.mu.Lock()
	h.gate = gate
	h.mu.Unlock()
	return func() { close(gate) }
}

func (h *heldReplies) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *heldReplies) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *heldReplies) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.mu.Lock()
		gate := h.gate
		h.gate = nil
		h.mu.Unlock()
		if gate != nil {
			<-gate
		}
		return err
	}
}
