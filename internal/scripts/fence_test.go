package scripts

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
)

// FenceTTL in Go and FENCE_TTL_MS in lib.lua say the same.
func TestFenceTTL(t *testing.T) {
	lib, err := luaFiles.ReadFile("lib.lua")
	require.NoError(t, err)
	m := regexp.MustCompile(`local FENCE_TTL_MS = (\d+)`).FindSubmatch(lib)
	require.NotNil(t, m, "lib.lua defines FENCE_TTL_MS")
	ms, err := strconv.ParseInt(string(m[1]), 10, 64)
	require.NoError(t, err)
	assert.Equal(t, FenceTTL, time.Duration(ms)*time.Millisecond)
}

// Every fenced acquire floors its token by the server's clock: the first
// token of a name is the server's time in microseconds; a fence lost (a
// restart without persistence, its expiry, a lagging replica) still yields
// a higher token; a counter ahead of the clock (a clock stepped back) goes
// on from the counter; and each token leaves the fence to expire FenceTTL
// later.
func TestTokensFlooredByClock(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		owner := 0
		kinds := []struct {
			name    string
			fence   string
			acquire func(t *testing.T) uint64 // a fresh hold by a new owner; the lock is then freed
		}{
			{"lock", testLock("").Fence, func(t *testing.T) uint64 {
				owner++
				l := testLock(strconv.Itoa(owner))
				a, err := l.Acquire(ctx, rdb, l.Owner+":1", TokenArg(0), NewLeaseArg(time.Minute, nil), NoRegistry)
				require.NoError(t, err)
				require.True(t, a.OK)
				require.NoError(t, rdb.Del(ctx, l.Hash).Err())
				return a.Token
			}},
			{"fair", testFair("").Fence, func(t *testing.T) uint64 {
				owner++
				f := testFair(strconv.Itoa(owner))
				a, err := f.Acquire(ctx, rdb, f.Owner+":1", TokenArg(0), NewLeaseArg(time.Minute, nil), false, time.Minute)
				require.NoError(t, err)
				require.True(t, a.OK)
				require.NoError(t, rdb.Del(ctx, f.Lock.Hash).Err())
				return a.Token
			}},
			{"rw", testRW("").Lock.Fence, func(t *testing.T) uint64 {
				owner++
				w := testRW(strconv.Itoa(owner))
				a, _, err := w.Write(ctx, rdb, w.Lock.Owner+":1", TokenArg(0), NewLeaseArg(time.Minute, nil), false, NoRegistry, time.Minute)
				require.NoError(t, err)
				require.True(t, a.OK)
				require.NoError(t, rdb.Del(ctx, w.Lock.Hash).Err())
				return a.Token
			}},
			{"xsem", testXSem().Fence, func(t *testing.T) uint64 {
				owner++
				x := testXSem()
				_, err := x.Set(ctx, rdb, "s:"+strconv.Itoa(owner), SetIfUnset, 1)
				require.NoError(t, err)
				a, err := x.Acquire(ctx, rdb, "p:"+strconv.Itoa(owner), time.Minute, SemTry, time.Minute)
				require.NoError(t, err)
				require.True(t, a.OK)
				require.NoError(t, rdb.Del(ctx, x.Permits, x.Leases, x.Tokens, x.Done).Err())
				return a.Token
			}},
		}
		for _, k := range kinds {
			t.Run(k.name, func(t *testing.T) {
				require.NoError(t, rdb.FlushAll(ctx).Err())
				before := serverMicros(t, rdb)
				first := k.acquire(t)
				assert.GreaterOrEqual(t, first, before, "the first token is the server's clock in µs")
				assert.LessOrEqual(t, first, serverMicros(t, rdb))
				pttl := rdb.PTTL(ctx, k.fence).Val()
				assert.Greater(t, pttl, FenceTTL-time.Minute, "the fence expires a day after the last token")
				assert.LessOrEqual(t, pttl, FenceTTL)

				second := k.acquire(t)
				assert.Greater(t, second, first)

				require.NoError(t, rdb.Del(ctx, k.fence).Err()) // a restart without persistence
				third := k.acquire(t)
				assert.Greater(t, third, second, "the fence lost, the clock keeps tokens increasing")

				ahead := serverMicros(t, rdb) + 3_600_000_000 // the clock is an hour behind the counter
				require.NoError(t, rdb.HSet(ctx, k.fence, "n", strconv.FormatUint(ahead, 10)).Err())
				assert.Equal(t, ahead+1, k.acquire(t), "a counter ahead of the clock goes on from the counter")
			})
		}
	})
}

// serverMicros returns the server's clock in microseconds.
func serverMicros(t *testing.T, rdb *redis.Client) uint64 {
	t.Helper()
	now, err := rdb.Time(context.Background()).Result()
	require.NoError(t, err)
	return uint64(now.UnixMicro())
}
