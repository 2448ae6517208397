package lease_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/redistest"
)

// sent is a go-redis hook that records what the client sends: a command
// by its name ("script load" for a subcommand), a pipeline as its
// commands' names joined by "+"; not a new connection's handshake.
type sent struct {
	mu   sync.Mutex
	seen []string
}

func (s *sent) DialHook(next redis.DialHook) redis.DialHook { return next }

func (s *sent) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n := name(cmd); n != "hello" && n != "client" {
			s.add(n)
		}
		return next(ctx, cmd)
	}
}

func (s *sent) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		names := make([]string, len(cmds))
		for i, c := range cmds {
			names[i] = name(c)
		}
		s.add(strings.Join(names, "+"))
		return next(ctx, cmds)
	}
}

func (s *sent) add(what string) {
	s.mu.Lock()
	s.seen = append(s.seen, what)
	s.mu.Unlock()
}

func (s *sent) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := s.seen
	s.seen = nil
	return seen
}

func name(c redis.Cmder) string {
	if c.Name() == "script" && len(c.Args()) > 1 {
		return "script " + strings.ToLower(c.Args()[1].(string))
	}
	return c.Name()
}

// renewToo is renew under another SHA1.
var renewToo = redis.NewScript(`-- another
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) return 1 end
return 0`)

// After SCRIPT FLUSH, a renewal pipeline that ends in WAIT loads each
// script its NOSCRIPT replies name once, with SCRIPT LOAD, and sends those
// renewals once more, WAIT again; the renewals run, and no script body is
// sent with EVAL.
func TestPipelineLoadsLostScripts(t *testing.T) {
	bubbleWith(t, lease.Replicas{N: 1, Timeout: time.Millisecond}, func(t *testing.T, m *miniredis.Miniredis,
		rdb *redis.Client, rt *redistest.RoundTrips, w *lease.Watchdog) {
		ctx := context.Background()
		var lost atomic.Int32
		for _, key := range []string{"a", "b", "c"} {
			require.NoError(t, rdb.Set(ctx, key, "x", ttl).Err())
			s := renew
			if key == "c" {
				s = renewToo
			}
			_, err := w.Add(lease.Renewal{Script: s, Keys: []string{key}, Args: []any{ttl.Milliseconds()}, Waiter: true},
				time.Now(), func(bool) { lost.Add(1) })
			require.NoError(t, err)
		}
		h := &sent{}
		rdb.AddHook(h)
		require.NoError(t, rdb.ScriptFlush(ctx).Err())
		h.take()
		time.Sleep(w.Interval() + time.Millisecond)
		synctest.Wait()
		assert.Equal(t, []string{"evalsha+evalsha+evalsha+wait", "script load", "script load",
			"evalsha+evalsha+evalsha+wait"}, h.take())
		for _, key := range []string{"a", "b", "c"} {
			assert.Greater(t, rdb.PTTL(ctx, key).Val(), ttl-w.Interval(), "%s was renewed", key)
		}
		assert.Zero(t, lost.Load(), "a waiter's heartbeat counts without replicas")
		assert.Zero(t, rt.Commands("eval"))
	})
}
