package scripts

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
)

// BenchmarkServerCPUFloor measures what an uncontended Lock+Unlock costs
// Redis, in server CPU per cycle (used_cpu_user + used_cpu_sys of INFO cpu),
// for rlock's scripts against the floor their guarantees set: 32 goroutines,
// each with its own connection and name, cycling for a second per variant,
// on one redis-server:
//
//		go test ./internal/scripts -run '^$' -bench ServerCPUFloor -benchtime 1x -count 3
//
//	  - redsync: SET NX PX, then a compare-and-delete script (the baseline);
//	  - rlock: lock_acquire and lock_release as they ship;
//	  - lean: the same redis.calls as rlock's uncontended path (kind and
//	    wrong-type checks, the request markers, the fencing token, the
//	    registry read, the lease, the holder metadata), written straight,
//	    without the shared helpers;
//	  - lean without the markers, the fence, or the registry, each, and
//	    without all three: what each guarantee costs.
//
// Each reports µs/cycle and x-redsync, the ratio to the baseline of the
// same op.
func BenchmarkServerCPUFloor(b *testing.B) {
	srv := redistest.Real(b)
	ctx := context.Background()
	admin := srv.Client(b)
	variants := []floorVariant{
		{name: "redsync", release: `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`},
		{name: "rlock", acquire: lockAcquire.src, release: lockRelease.src},
		leanFloor("lean", true, true, true),
		leanFloor("lean-no-markers", false, true, true),
		leanFloor("lean-no-fence", true, false, true),
		leanFloor("lean-no-registry", true, true, false),
		leanFloor("lean-none", false, false, false),
	}
	for b.Loop() {
		var base float64
		for i, v := range variants {
			us := v.run(b, ctx, srv, admin, i)
			if i == 0 {
				base = us
			}
			b.ReportMetric(us, v.name+"-µs/cycle")
			if i > 0 {
				b.ReportMetric(us/base, v.name+"-x-redsync")
			}
		}
	}
	b.ReportMetric(0, "ns/op")
}

// floorVariant is a pair of scripts; no acquire: SET NX PX.
type floorVariant struct{ name, acquire, release string }

// run cycles the variant on 32 names at once for a second and returns the
// server CPU per cycle, in µs.
func (v floorVariant) run(b *testing.B, ctx context.Context, srv *redistest.Server, admin *redis.Client, vi int) float64 {
	var acq *redis.Script
	if v.acquire != "" {
		acq = redis.NewScript(v.acquire)
		require.NoError(b, acq.Load(ctx, admin).Err())
	}
	rel := redis.NewScript(v.release)
	require.NoError(b, rel.Load(ctx, admin).Err())
	start := serverCPU(b, ctx, admin)
	cycles := cycleNames(b, srv, fmt.Sprintf("floor-%d", vi), func(c *redis.Client, name string, n int) error {
		hash, fence, marks, waiters := "f:{"+name+"}:lock", "f:{"+name+"}:fence", "f:{"+name+"}:marks:c", "f:{"+name+"}:waiters"
		args := []any{"rlock", "PUBLISH", "f:{" + name + "}:ch", 60000, "c:1"}
		req := "c:" + strconv.Itoa(2*n+1)
		if acq == nil {
			if err := c.SetNX(ctx, hash, req, 30*time.Second).Err(); err != nil {
				return err
			}
			return rel.EvalSha(ctx, c, []string{hash}, req).Err()
		}
		r, err := acq.EvalSha(ctx, c, []string{hash, fence, marks, waiters}, append(args, req, 30000, "m", "0", "r", 30000)...).Slice()
		if err != nil {
			return err
		}
		out := "c:" + strconv.Itoa(2*n+2)
		return rel.EvalSha(ctx, c, []string{hash, fence, marks, waiters}, append(args, out, "0", fmt.Sprint(r[1]))...).Err()
	})
	return (serverCPU(b, ctx, admin) - start) / float64(cycles)
}

// cycleNames runs cycle on 32 goroutines at once for a second, each with
// its own connection and its own name (prefix and its number), and returns
// how many cycles ran; an error fails b.
func cycleNames(b *testing.B, srv *redistest.Server, prefix string,
	cycle func(c *redis.Client, name string, n int) error) int {
	const workers = 32
	var wg sync.WaitGroup
	counts := make([]int, workers)
	errs := make([]error, workers)
	deadline := time.Now().Add(time.Second)
	for w := range workers {
		c := srv.Client(b)
		wg.Go(func() {
			name := fmt.Sprintf("%s-%d", prefix, w)
			for n := 0; n < 1_000_000 && time.Now().Before(deadline) && errs[w] == nil; n++ {
				errs[w] = cycle(c, name, n)
				counts[w]++
			}
		})
	}
	wg.Wait()
	cycles := 0
	for w := range workers {
		require.NoError(b, errs[w])
		cycles += counts[w]
	}
	return cycles
}

// serverCPU returns the server's CPU time so far, in µs.
func serverCPU(b *testing.B, ctx context.Context, rdb *redis.Client) float64 {
	info, err := rdb.Info(ctx, "cpu").Result()
	require.NoError(b, err)
	var us float64
	for _, line := range strings.Split(info, "\r\n") {
		for _, k := range []string{"used_cpu_user:", "used_cpu_sys:"} {
			if v, ok := strings.CutPrefix(line, k); ok {
				s, err := strconv.ParseFloat(v, 64)
				require.NoError(b, err)
				us += s * 1e6
			}
		}
	}
	return us
}

// leanFloor returns a lean pair (see BenchmarkServerCPUFloor), with or
// without the request markers, the fence and the registry.
func leanFloor(name string, markers, fence, registry bool) floorVariant {
	on := func(b bool) string { return strconv.FormatBool(b) }
	r := strings.NewReplacer("MARKERS", on(markers), "FENCE", on(fence), "REGISTRY", on(registry))
	return floorVariant{name: name, acquire: r.Replace(leanAcquireLua), release: r.Replace(leanReleaseLua)}
}

const leanAcquireLua = `
if redis.call('HLEN', KEYS[1]) ~= 0 then
  redis.call('HMGET', KEYS[1], 'k', 'o', 'c', 't', 'r')
  return {0, 1}
end
local waiting = 0
if REGISTRY then waiting = redis.call('ZCARD', KEYS[4]) end
if MARKERS and redis.call('ZSCORE', KEYS[3], 'x:' .. ARGV[6]) then
  return {0, 1}
end
local t = redis.call('TIME')
local token = '1'
if FENCE then
  local f = redis.call('HMGET', KEYS[2], 'n', 'x')
  local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  token = string.format('%.0f', math.max(tonumber(f[1] or '0') + 1, us))
  redis.call('HSET', KEYS[2], 'n', token)
end
redis.call('HSET', KEYS[1], 'k', ARGV[1], 'o', ARGV[5], 'c', 1, 'x', 0, 't', token, 'r', ARGV[6], 'm', ARGV[8], 'a', t[1])
redis.call('PEXPIRE', KEYS[1], ARGV[7])
if waiting > 0 then redis.call('ZREM', KEYS[4], 'c') end
return {1, tonumber(token), 1}
`

const leanReleaseLua = `
local h = redis.call('HMGET', KEYS[1], 'k', 'o', 'c', 'r', 't')
if h[2] ~= ARGV[5] or h[5] ~= ARGV[8] then
  return -1
end
local waiting = 0
if REGISTRY then waiting = redis.call('ZCARD', KEYS[4]) end
if MARKERS then
  local t = redis.call('TIME')
  redis.call('ZADD', KEYS[3], tonumber(t[1]) * 1000 + 60000, 'r:' .. ARGV[6])
  redis.call('PEXPIRE', KEYS[3], 60000)
end
redis.call('DEL', KEYS[1])
if waiting > 0 then redis.call('ZRANGE', KEYS[4], 0, 0) end
return 0
`
