package scripts

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lateCopy is a copy of a request that reaches Redis late: after the hold
// it was sent for ended and its owner took a fresh one, or after a later
// request of the same hold. send sends it; want is its reply.
type lateCopy struct {
	name string
	send func() (any, error)
	want any
}

// checkLateCopies sends each copy in turn and checks that it replies as
// want says and leaves every key but the request markers (keys ending in
// skip) as it was: contents, and a TTL that only ran on (a late renewal or
// Extend would set another).
func checkLateCopies(t *testing.T, ctx context.Context, rdb *redis.Client, copies []lateCopy, skip ...string) {
	t.Helper()
	before, ttls := keyDump(t, ctx, rdb, skip)
	require.NotEmpty(t, before, "a fresh hold to keep")
	for _, c := range copies {
		got, err := c.send()
		require.NoError(t, err, c.name)
		assert.Equal(t, c.want, got, "%s: reply", c.name)
		after, now := keyDump(t, ctx, rdb, skip)
		assert.Equal(t, before, after, "%s: the fresh hold stays as it was", c.name)
		for key, ttl := range ttls {
			if ttl < 0 {
				assert.Equal(t, ttl, now[key], "%s: %s has no TTL", c.name, key)
				continue
			}
			assert.LessOrEqual(t, now[key], ttl, "%s: %s's TTL not extended", c.name, key)
			assert.Greater(t, now[key], ttl-time.Second, "%s: %s's TTL not cut", c.name, key)
		}
	}
}

// keyDump returns every key's contents, and its TTL, but those of the keys
// whose names end in one of skip.
func keyDump(t *testing.T, ctx context.Context, rdb *redis.Client, skip []string) (map[string]string, map[string]time.Duration) {
	t.Helper()
	keys, err := rdb.Keys(ctx, "*").Result()
	require.NoError(t, err)
	dump, ttls := map[string]string{}, map[string]time.Duration{}
next:
	for _, key := range keys {
		for _, s := range skip {
			if strings.HasSuffix(key, s) {
				continue next
			}
		}
		var v any
		switch typ := rdb.Type(ctx, key).Val(); typ {
		case "hash":
			h := rdb.HGetAll(ctx, key).Val()
			fields := make([]string, 0, len(h))
			for f, x := range h {
				fields = append(fields, f+"="+x)
			}
			sort.Strings(fields)
			v = fields
		case "zset":
			v = rdb.ZRangeWithScores(ctx, key, 0, -1).Val()
		case "list":
			v = rdb.LRange(ctx, key, 0, -1).Val()
		case "string":
			v = rdb.Get(ctx, key).Val()
		case "stream":
			v = rdb.XRange(ctx, key, "-", "+").Val()
		default:
			v = typ
		}
		dump[key] = fmt.Sprint(v)
		ttls[key] = rdb.PTTL(ctx, key).Val()
	}
	return dump, ttls
}

// int64Of returns the sending of script with keys and args, replying an
// int64, for a lateCopy.
func int64Of(ctx context.Context, rdb *redis.Client, script *redis.Script, keys []string, args ...any) func() (any, error) {
	return func() (any, error) {
		return script.Run(ctx, rdb, keys, args...).Int64()
	}
}

// extendSeq numbers the Extend requests of tests that do not name them.
var extendSeq atomic.Int64

// extendReq returns the id of an Extend request, numbered above every
// earlier one (see extend_seen in lib.lua).
func extendReq() string { return "e:" + strconv.FormatInt(extendSeq.Add(1), 10) }

// fenceNow reads the last token of the fence at key, as ForceUnlock does
// before its force: a force told it ends whatever holds. It is "0" when
// there is none, or the key holds another type (a test of the script's
// type checks).
func fenceNow(t *testing.T, ctx context.Context, rdb *redis.Client, key string) string {
	t.Helper()
	n, err := rdb.HGet(ctx, key, "n").Result()
	if err != nil {
		return "0"
	}
	return n
}

// forceReq numbers the tests' force requests.
var forceReqs atomic.Int64

func forceReq() string { return fmt.Sprintf("forcer:%d", forceReqs.Add(1)) }

// forceReply is a force's reply as the tables of the script tests want it:
// whether it ended a hold.
func forceReply(f Forced, err error) (any, error) { return f == ForceDone, err }
