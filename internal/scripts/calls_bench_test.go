package scripts

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
)

// BenchmarkScriptCalls measures what each call in the uncontended
// Lock+Unlock scripts costs Redis: for redsync's pair (the baseline),
// rlock (lock_acquire, lock_release), rfairlock (fair_acquire,
// fair_release) and rrwlock's write hold (rw_write, rw_unlock), 32
// goroutines, each with its own connection and name, cycle for a second on
// one redis-server, and INFO commandstats (reset before) says how often
// each command ran and for how long, in the server's own clock:
//
//	go test ./internal/scripts -run '^$' -bench ScriptCalls -benchtime 1x -v
//
// It logs one table per kind: each command's calls and µs per cycle, and
// "lua", the scripts' time that no command took (the interpreter: the
// arguments' tables, the definitions' closures, the code between calls).
// It reports each kind's script µs per cycle and its lua share.
func BenchmarkScriptCalls(b *testing.B) {
	srv := redistest.Real(b)
	ctx := context.Background()
	admin := srv.Client(b)
	lease := NewLeaseArg(30*time.Second, nil)
	redsync := redis.NewScript(
		`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)
	kinds := []struct {
		name  string
		cycle func(ctx context.Context, c *redis.Client, name string, n int) error
	}{
		{"redsync", func(ctx context.Context, c *redis.Client, name string, n int) error {
			req := "c:" + strconv.Itoa(n)
			if err := c.SetNX(ctx, "{"+name+"}:lock", req, 30*time.Second).Err(); err != nil {
				return err
			}
			return redsync.Run(ctx, c, []string{"{" + name + "}:lock"}, req).Err()
		}},
		{"rlock", func(ctx context.Context, c *redis.Client, name string, n int) error {
			l := callsLock(name, "rlock")
			a, err := l.Acquire(ctx, c, "c:"+strconv.Itoa(2*n+1), NoToken, lease, Register)
			if err == nil && !a.OK {
				err = fmt.Errorf("%s: not taken", name)
			}
			if err != nil {
				return err
			}
			_, _, err = l.Release(ctx, c, "c:"+strconv.Itoa(2*n+2), false, TokenArg(a.Token))
			return err
		}},
		{"rfairlock", func(ctx context.Context, c *redis.Client, name string, n int) error {
			l := callsLock(name, "rfairlock")
			f := NewFair(&l, "f:{"+name+"}:queue", "f:{"+name+"}:alive", "f:{"+name+"}:waiting", "")
			a, err := f.Acquire(ctx, c, "c:"+strconv.Itoa(2*n+1), NoToken, lease, true, 10*time.Second)
			if err == nil && !a.OK {
				err = fmt.Errorf("%s: not taken", name)
			}
			if err != nil {
				return err
			}
			_, err = f.Release(ctx, c, "c:"+strconv.Itoa(2*n+2), false, TokenArg(a.Token))
			return err
		}},
		{"rrwlock-write", func(ctx context.Context, c *redis.Client, name string, n int) error {
			rw := RW{Lock: callsLock(name, "rrwlock"), Readers: "f:{" + name + "}:readers",
				Leases: "f:{" + name + "}:leases", Writers: "f:{" + name + "}:writers",
				WriterWaiters: "f:{" + name + "}:wwaiters", WriterChannel: "f:{" + name + "}:wch"}
			a, _, err := rw.Write(ctx, c, "c:"+strconv.Itoa(2*n+1), NoToken, lease, true, Register, 10*time.Second)
			if err == nil && !a.OK {
				err = fmt.Errorf("%s: not taken", name)
			}
			if err != nil {
				return err
			}
			_, _, err = rw.Unlock(ctx, c, "c:"+strconv.Itoa(2*n+2), false, TokenArg(a.Token))
			return err
		}},
	}
	for b.Loop() {
		for ki, k := range kinds {
			require.NoError(b, admin.ConfigResetStat(ctx).Err())
			cycles := cycleNames(b, srv, fmt.Sprintf("calls-%d", ki), func(c *redis.Client, name string, n int) error {
				return k.cycle(ctx, c, name, n)
			})
			stats := commandStats(b, ctx, admin)
			total, inner := stats["evalsha"].usec, 0.0
			var rows []string
			for cmd, s := range stats {
				if cmd == "evalsha" || cmd == "info" || cmd == "config|resetstat" || cmd == "hello" ||
					cmd == "script|load" || cmd == "set" {
					continue
				}
				inner += s.usec
				rows = append(rows, fmt.Sprintf("  %-18s %5.2f calls %6.2f µs", strings.ToUpper(cmd),
					float64(s.calls)/float64(cycles), s.usec/float64(cycles)))
			}
			sort.Strings(rows)
			if k.name == "redsync" {
				total += stats["set"].usec
				inner += stats["set"].usec
				rows = append(rows, fmt.Sprintf("  %-18s %5.2f calls %6.2f µs", "SET (not a script)",
					float64(stats["set"].calls)/float64(cycles), stats["set"].usec/float64(cycles)))
			}
			lua := (total - inner) / float64(cycles)
			b.Logf("%s: %.2f µs per Lock+Unlock in commands and scripts (%d cycles)\n%s\n  %-18s %5s       %6.2f µs",
				k.name, total/float64(cycles), cycles, strings.Join(rows, "\n"), "lua", "", lua)
			b.ReportMetric(total/float64(cycles), k.name+"-µs/cycle")
			b.ReportMetric(lua/(total/float64(cycles)), k.name+"-lua-share")
		}
	}
	b.ReportMetric(0, "ns/op")
}

// callsLock is the lock hash of name as BenchmarkScriptCalls' cycles name
// it, for kind.
func callsLock(name, kind string) Lock {
	return Lock{Hash: "f:{" + name + "}:lock", Fence: "f:{" + name + "}:fence", Marks: "f:{" + name + "}:marks:c",
		Waiters: "f:{" + name + "}:waiters", Kind: kind, Owner: "c", Publish: "PUBLISH", Channel: "f:{" + name + "}:ch"}
}

// commandStat is one row of INFO commandstats.
type commandStat struct {
	calls int64
	usec  float64
}

// commandStats reads INFO commandstats, by command name.
func commandStats(b *testing.B, ctx context.Context, rdb *redis.Client) map[string]commandStat {
	info, err := rdb.Info(ctx, "commandstats").Result()
	require.NoError(b, err)
	out := map[string]commandStat{}
	for _, line := range strings.Split(info, "\r\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
		if !ok || !strings.HasPrefix(line, "cmdstat_") {
			continue
		}
		var s commandStat
		for _, f := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "calls":
				s.calls, err = strconv.ParseInt(v, 10, 64)
			case "usec":
				s.usec, err = strconv.ParseFloat(v, 64)
			}
			require.NoError(b, err)
		}
		out[name] = s
	}
	return out
}
