package scripts

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
)

// Touch rewrites a field only where it holds the value, and changes
// nothing either way.
func TestTouch(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx := context.Background()
		rdb := srv.Client(t)
		require.NoError(t, rdb.HSet(ctx, "t:{n}:lock", "r", "a:1", "c", 2).Err())
		for _, c := range []struct {
			key, field, value string
			want              bool
		}{
			{"t:{n}:lock", "r", "a:1", true},
			{"t:{n}:lock", "r", "a:2", false},
			{"t:{n}:lock", "x", "a:1", false},
			{"t:{n}:none", "r", "a:1", false},
		} {
			ok, err := Touch(ctx, rdb, c.key, c.field, c.value)
			require.NoError(t, err)
			assert.Equal(t, c.want, ok, "%+v", c)
		}
		assert.Equal(t, map[string]string{"r": "a:1", "c": "2"}, rdb.HGetAll(ctx, "t:{n}:lock").Val())
		assert.Zero(t, rdb.Exists(ctx, "t:{n}:none").Val())
	})
}

// What Touch is for: its write reaches the replication stream though it
// changes nothing, where a script that writes nothing does not (Redis 7.2
// and later advance a connection's WAIT offset only by what it
// propagates), so a WAIT after it waits for the replicas to catch up with
// everything before it: with the replica paused, it times out.
func TestTouchIsReplicated(t *testing.T) {
	ctx := context.Background()
	pair := redistest.StartReplicated(t)
	rdb := pair.Primary.Client(t)
	offset := replOffset(t, rdb)
	require.NoError(t, rdb.HSet(ctx, "t:{n}:lock", "r", "a:1").Err())
	before := offset()
	ok, err := Touch(ctx, rdb, "t:{n}:lock", "r", "a:2")
	require.NoError(t, err)
	require.False(t, ok)
	assert.Equal(t, before, offset(), "no match: nothing propagated")
	ok, err = Touch(ctx, rdb, "t:{n}:lock", "r", "a:1")
	require.NoError(t, err)
	require.True(t, ok)
	assert.NotEqual(t, before, offset(), "the rewrite propagated")

	pair.PauseReplica(t)
	defer pair.ResumeReplica(t)
	pipe := rdb.Pipeline()
	touch.EvalSha(ctx, pipe, []string{"t:{n}:lock"}, "r", "a:1")
	wait := redis.NewIntCmd(ctx, "wait", 1, 100)
	_ = pipe.Process(ctx, wait)
	_, err = pipe.Exec(ctx)
	require.NoError(t, err)
	assert.Zero(t, wait.Val(), "a write the paused replica has not acknowledged")
}

// Cover rewrites the 'k' field of the first primitive's hash among its
// keys, which reaches the replication stream and changes nothing; on any
// other key (absent, not a hash, a hash without 'k') it writes nothing and
// fails nothing.
func TestWaitReplicasCoverIsReplicated(t *testing.T) {
	ctx := context.Background()
	pair := redistest.StartReplicated(t)
	rdb := pair.Primary.Client(t)
	offset := replOffset(t, rdb)
	require.NoError(t, cover.Load(ctx, rdb).Err())
	require.NoError(t, rdb.HSet(ctx, "t:{n}:lock", "k", "rlock", "o", "a").Err())
	require.NoError(t, rdb.Set(ctx, "t:{n}:string", "x", 0).Err())
	require.NoError(t, rdb.HSet(ctx, "t:{n}:hash", "o", "a").Err())
	cover := func(keys ...string) int64 {
		pipe := rdb.Pipeline()
		cmd := Cover(ctx, pipe, keys)
		_, err := pipe.Exec(ctx)
		require.NoError(t, err)
		n, err := cmd.Int64()
		require.NoError(t, err)
		return n
	}
	before := offset()
	for _, key := range []string{"t:{n}:absent", "t:{n}:string", "t:{n}:hash"} {
		assert.Zero(t, cover(key), key)
	}
	assert.Zero(t, cover("t:{n}:absent", "t:{n}:string", "t:{n}:hash"))
	assert.Equal(t, before, offset(), "nothing propagated")
	assert.Equal(t, "x", rdb.Get(ctx, "t:{n}:string").Val())
	assert.Equal(t, map[string]string{"o": "a"}, rdb.HGetAll(ctx, "t:{n}:hash").Val())
	assert.Zero(t, rdb.Exists(ctx, "t:{n}:absent").Val())

	// The first primitive's hash among the keys: an rrwlock's readers when
	// no writer holds (its lock hash, the first key, is absent).
	assert.Equal(t, int64(1), cover("t:{n}:absent", "t:{n}:string", "t:{n}:lock", "t:{n}:hash"))
	assert.NotEqual(t, before, offset(), "the rewrite propagated")
	assert.Equal(t, map[string]string{"k": "rlock", "o": "a"}, rdb.HGetAll(ctx, "t:{n}:lock").Val())
}

// replOffset stops the primary's PINGs to its replica, which would move
// the offset meanwhile, and returns a function that reads the primary's
// master_repl_offset.
func replOffset(t *testing.T, rdb *redis.Client) func() string {
	ctx := context.Background()
	require.NoError(t, rdb.ConfigSet(ctx, "repl-ping-replica-period", "3600").Err())
	return func() string {
		for _, line := range strings.Split(rdb.Info(ctx, "replication").Val(), "\r\n") {
			if v, ok := strings.CutPrefix(line, "master_repl_offset:"); ok {
				return v
			}
		}
		t.Fatal("no master_repl_offset in INFO replication")
		return ""
	}
}
