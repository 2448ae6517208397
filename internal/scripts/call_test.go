package scripts

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
)

// argsHook keeps the arguments of every command it sees.
type argsHook struct {
	mu   sync.Mutex
	seen [][]any
}

func (h *argsHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *argsHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *argsHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.mu.Lock()
		h.seen = append(h.seen, cmd.Args())
		h.mu.Unlock()
		return next(ctx, cmd)
	}
}

// A prepared Call whose script Redis lost (SCRIPT FLUSH, a restart, a
// failover) loads it with EVAL and runs it; the failed EVALSHA keeps its
// own arguments, for the hooks that kept them.
func TestCallLoadsLostScript(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		h := &argsHook{}
		rdb.AddHook(h)
		l := testLock("a").Prepared(time.Minute)
		require.NoError(t, rdb.ScriptFlush(ctx).Err())
		a, err := l.Acquire(ctx, rdb, "a:1", NoToken, NewLease(time.Minute, nil))
		require.NoError(t, err)
		assert.True(t, a.OK)
		h.mu.Lock()
		seen := h.seen
		h.mu.Unlock()
		require.GreaterOrEqual(t, len(seen), 2)
		assert.Equal(t, "evalsha", seen[len(seen)-2][0], "the EVALSHA's arguments are its own")
		assert.Equal(t, "eval", seen[len(seen)-1][0])
		loaded, err := rdb.ScriptExists(ctx, lockAcquire.Hash()).Result()
		require.NoError(t, err)
		assert.Equal(t, []bool{true}, loaded, "the script is cached again")
	})
}
