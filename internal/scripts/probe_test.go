package scripts

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
)

// A server out of memory (maxmemory reached, noeviction) refuses XADD
// inside the probe with OOM: that is no refusal of the command, which an
// ACL or a managed service makes, and the probe reports none.
func TestProbeOutOfMemoryIsNoRefusal(t *testing.T) {
	srv := redistest.Real(t)
	ctx := context.Background()
	rdb := srv.Client(t)
	require.NoError(t, rdb.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())
	require.NoError(t, rdb.ConfigSet(ctx, "maxmemory", "1").Err())
	t.Cleanup(func() { _ = rdb.ConfigSet(ctx, "maxmemory", "0").Err() })
	refused, err := Probe(ctx, rdb, "rc:{redcoord-check}:probe", "PUBLISH", "rc:{redcoord-check}:probe-ch")
	require.NoError(t, err)
	require.Empty(t, refused, "an OOM reply is taken for a refusal")
}

// flushAfterLoad flushes the server's scripts after the first SCRIPT LOAD
// it sees, as a SCRIPT FLUSH (or a failover) between the probe's load and
// its EVALSHA does, and keeps the name of every command.
type flushAfterLoad struct {
	admin   *redis.Client
	flushed bool
	seen    []string
}

func (h *flushAfterLoad) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *flushAfterLoad) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *flushAfterLoad) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.seen = append(h.seen, cmd.Name())
		err := next(ctx, cmd)
		if cmd.Name() == "script" && !h.flushed {
			h.flushed = true
			_ = h.admin.ScriptFlush(ctx).Err()
		}
		return err
	}
}

// The probe's script lost between its SCRIPT LOAD and its EVALSHA is
// loaded again: the probe sends no EVAL of its body, and finds nothing
// refused.
func TestProbeLoadsItsLostScript(t *testing.T) {
	srv := redistest.Real(t)
	ctx := context.Background()
	rdb := srv.Client(t)
	h := &flushAfterLoad{admin: srv.Client(t)}
	rdb.AddHook(h)
	refused, err := Probe(ctx, rdb, "rc:{redcoord-check}:probe", "PUBLISH", "rc:{redcoord-check}:probe-ch")
	require.NoError(t, err)
	require.Empty(t, refused)
	require.True(t, h.flushed)
	require.NotContains(t, h.seen, "eval", "commands sent: %v", h.seen)
}
