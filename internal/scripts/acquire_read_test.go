package scripts

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
)

// An acquire of an absent lock hash reads it with one HLEN (read_hash):
// neither HMGET nor EXISTS, the two commands a read and a kind check of an
// absent hash would take; rw_write reads rrwlock's absent readers hash
// alike. The three locks' acquires alike.
func TestAcquireOfAbsentLockReadsOnce(t *testing.T) {
	srv := redistest.Real(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	lease := NewLeaseArg(time.Minute, []byte("m"))
	for name, acquire := range map[string]func() (bool, error){
		"lock_acquire": func() (bool, error) {
			a, err := testLock("a").Acquire(ctx, rdb, "a:1", NoToken, lease, NoRegistry)
			return a.OK, err
		},
		"fair_acquire": func() (bool, error) {
			a, err := testFair("a").Acquire(ctx, rdb, "a:1", NoToken, lease, false, time.Second)
			return a.OK, err
		},
		"rw_write": func() (bool, error) {
			a, _, err := testRW("a").Write(ctx, rdb, "a:1", NoToken, lease, false, NoRegistry, time.Second)
			return a.OK, err
		},
	} {
		require.NoError(t, rdb.FlushAll(ctx).Err())
		require.NoError(t, rdb.ConfigResetStat(ctx).Err())
		ok, err := acquire()
		require.NoError(t, err, name)
		require.True(t, ok, name)
		calls := innerCalls(t, rdb)
		assert.Zero(t, calls["hmget"]-calls["fence_hmget"], "%s: %v", name, calls)
		assert.Zero(t, calls["hget"], "%s: %v", name, calls)
		assert.Zero(t, calls["exists"], "%s: %v", name, calls)
	}
}

// innerCalls returns the calls of each command since CONFIG RESETSTAT, by
// INFO commandstats, with fence_hmget the one HMGET that next_token makes.
func innerCalls(t *testing.T, rdb *redis.Client) map[string]int {
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	calls := map[string]int{"fence_hmget": 1}
	for line := range strings.Lines(info) {
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":calls=")
		if !ok {
			continue
		}
		n := 0
		for _, c := range rest {
			if c < '0' || c > '9' {
				break
			}
			n = n*10 + int(c-'0')
		}
		calls[name] = n
	}
	return calls
}
