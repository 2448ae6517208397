package core

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/internal/scripts"
)

// A script sent on a Writer that writes nothing, after a write that
// another connection made and the replicas have not acknowledged, fails
// with ErrNotReplicated: its WAIT covers every earlier write. That is a
// retry of an acquire whose first run took the hold and whose reply was
// lost (go-redis sends the pipeline again, on another connection), or an
// acquire that finds a grant another client's release wrote. The cover
// changes nothing in the hash (scripts.TestWaitReplicasCoverIsReplicated
// says when it writes); one that fails is a shortfall. The Valkey pass of
// CI is what makes this test bite: Redis 7.0's WAIT waits for every write
// before it, whatever the connection wrote.
func TestWaitReplicasCoversEarlierWrites(t *testing.T) {
	ctx := context.Background()
	pair := redistest.StartReplicated(t)
	rdb := pair.Primary.Client(t)
	other := pair.Primary.Client(t) // the connection of the first run
	const hash = "t:{n}:lock"
	require.NoError(t, rdb.HSet(ctx, hash, "k", "rlock", "o", "a").Err())
	read := redis.NewScript(`return redis.call('HGET', KEYS[1], 'o')`)
	require.NoError(t, read.Load(ctx, rdb).Err())
	s := &Session{RDB: rdb}
	s.Config.Replicas = Replicas{N: 1, Timeout: 100 * time.Millisecond}
	w := s.Writer()
	require.NoError(t, read.EvalSha(ctx, w, []string{hash}).Err(), "the replica is up")
	// A server without the cover's script (restarted, SCRIPT FLUSH) gets it
	// loaded.
	require.NoError(t, rdb.ScriptFlush(ctx).Err())
	require.NoError(t, read.Load(ctx, rdb).Err())
	pair.WaitAcked(t)

	pair.PauseReplica(t)
	defer pair.ResumeReplica(t)
	require.NoError(t, other.HSet(ctx, hash, "o", "b").Err()) // the first run's write, its reply lost
	before := rdb.HGetAll(ctx, hash).Val()
	v, err := read.EvalSha(ctx, w, []string{hash}).Result()
	assert.ErrorIs(t, err, errs.ErrNotReplicated, "the WAIT waits for the other connection's write")
	assert.Equal(t, "b", v, "the script's reply is kept")
	assert.Equal(t, before, rdb.HGetAll(ctx, hash).Val(), "the cover changes nothing")

	// A cover that fails (out of memory under noeviction) is a shortfall,
	// though a WAIT on a connection that wrote nothing returns at once.
	fresh := &Session{RDB: pair.Primary.Client(t)}
	fresh.Config.Replicas = s.Config.Replicas
	_, err = rdb.Pipelined(ctx, func(p redis.Pipeliner) error { scripts.LoadCover(ctx, p); return nil })
	require.NoError(t, err)
	require.NoError(t, rdb.ConfigSet(ctx, "maxmemory", "1").Err())
	defer rdb.ConfigSet(ctx, "maxmemory", "0")
	_, err = read.EvalSha(ctx, fresh.Writer(), []string{hash}).Result()
	assert.ErrorIs(t, err, errs.ErrNotReplicated, "the cover's write is refused")
	assert.ErrorContains(t, err, "OOM")
}
