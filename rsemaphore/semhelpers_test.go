package rsemaphore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/scripts"
	"github.com/redcoord/redcoord/rsemaphore"
)

// Helpers of the Semaphore's tests (the ExpirableSemaphore's have their own).

// semOpts returns the options of a fair or an unfair handle.
func semOpts(fair bool) []rsemaphore.Option {
	if fair {
		return []rsemaphore.Option{rsemaphore.WithFair()}
	}
	return nil
}

// semMode names a fair or an unfair subtest.
func semMode(fair bool) string {
	if fair {
		return "fair"
	}
	return "unfair"
}

// semIfFair returns n for fair waiters, 0 for unfair ones: what State's
// Waiting counts of n waiters.
func semIfFair(fair bool, n int64) int64 {
	if fair {
		return n
	}
	return 0
}

// semState reads s's State.
func semState(t testing.TB, s *rsemaphore.Semaphore) rsemaphore.State {
	t.Helper()
	st, err := s.State(context.Background())
	require.NoError(t, err)
	return st
}

func semAvailable(t testing.TB, s *rsemaphore.Semaphore) int64 {
	t.Helper()
	n, err := s.Available(context.Background())
	require.NoError(t, err)
	return n
}

func semTry(t testing.TB, s *rsemaphore.Semaphore, n int64) bool {
	t.Helper()
	ok, err := s.TryAcquire(context.Background(), n)
	require.NoError(t, err)
	return ok
}

// semAsync starts s.Acquire(ctx, n) and returns where its error arrives.
func semAsync(ctx context.Context, s *rsemaphore.Semaphore, n int64) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- s.Acquire(ctx, n) }()
	return ch
}

// semResult waits for the result of a semAsync, for at most 10s.
func semResult(t testing.TB, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Acquire did not return within 10s")
		return nil
	}
}

// semPending fails the test if the Acquire behind ch has returned.
func semPending(t testing.TB, ch <-chan error) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("Acquire returned %v while it should wait", err)
	default:
	}
}

// semWaiting waits until the Acquire calls started on the Client c are
// waiting: want of them subscribed to c's Hub and, for fair waiters, n
// queued in all, as s's State shows (State does not count unfair waiters).
// What the test does next then happens during their wait; the checks that
// follow never depend on it, only what they prove does.
func semWaiting(t testing.TB, c *redcoord.Client, want int, s *rsemaphore.Semaphore, fair bool, n int) {
	t.Helper()
	locktest.Eventually(t, func() bool { return semHubWaiters(t, c) == want }, "waiters subscribed")
	if fair {
		locktest.Eventually(t, func() bool { return semState(t, s).Waiting == int64(n) }, "fair waiters queued")
	}
}

// semHubWaiters returns how many waiters c's Hub has.
func semHubWaiters(t testing.TB, c *redcoord.Client) int {
	t.Helper()
	hub, err := c.Hub()
	require.NoError(t, err)
	return hub.Stats().Waiters
}

// semWarmUp runs every script of s once, so that later calls are one
// EVALSHA each (a script's first run on a server is two round trips).
func semWarmUp(t *testing.T, s *rsemaphore.Semaphore) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.SetPermits(ctx, 1))
	require.NoError(t, s.Acquire(ctx, 1))
	assert.False(t, semTry(t, s, 1))
	require.NoError(t, s.Release(ctx, 1))
	_, err := s.Drain(ctx)
	require.NoError(t, err)
	semState(t, s)
	ctx, cancel = context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	require.Error(t, s.Acquire(ctx, 1)) // ends with sem_leave
}

// semEveryMethod calls every method of s that may fail, with ctx, and
// returns their errors by name. The acquires are bounded: an argument that
// should be refused must not make them block.
func semEveryMethod(ctx context.Context, s *rsemaphore.Semaphore) map[string]error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, errAvailable := s.Available(ctx)
	_, errDrain := s.Drain(ctx)
	return map[string]error{
		"Acquire":       s.Acquire(ctx, 1),
		"TryAcquire":    locktest.Second(s.TryAcquire(ctx, 1)),
		"Release":       s.Release(ctx, 1),
		"TrySetPermits": locktest.Second(s.TrySetPermits(ctx, 1)),
		"SetPermits":    s.SetPermits(ctx, 1),
		"AddPermits":    s.AddPermits(ctx, 1),
		"Available":     errAvailable,
		"Drain":         errDrain,
		"State":         locktest.Second(s.State(ctx)),
	}
}

// semSnapshot returns every key's type, contents and TTL, to compare before
// and after a call that must write nothing.
func semSnapshot(t *testing.T, rdb *redis.Client) map[string]any {
	t.Helper()
	ctx := context.Background()
	out := map[string]any{}
	for _, k := range locktest.Keys(t, rdb) {
		var v any
		switch typ := rdb.Type(ctx, k).Val(); typ {
		case "hash":
			v = rdb.HGetAll(ctx, k).Val()
		case "zset":
			v = rdb.ZRangeWithScores(ctx, k, 0, -1).Val()
		case "list":
			v = rdb.LRange(ctx, k, 0, -1).Val()
		default:
			v = typ + ":" + rdb.Get(ctx, k).Val()
		}
		ttl := rdb.PTTL(ctx, k).Val() > 0 // its presence: the value ticks down
		out[k] = []any{v, ttl}
	}
	return out
}

// semCalls is a go-redis hook that counts the EVALSHA calls of each
// semaphore script, and those that replied 1, or an array that starts with
// 1 (sem_release's and sem_leave's success). Scripts run by EVAL (the
// first run on a server) are not counted: warm them up first.
type semCalls struct {
	names map[string]string // SHA -> script name

	mu    sync.Mutex     // guards calls and ones
	calls map[string]int // script name -> calls
	ones  map[string]int // script name -> calls that replied 1 (see above)
}

func newSemCalls() *semCalls {
	c := &semCalls{names: map[string]string{}, calls: map[string]int{}, ones: map[string]int{}}
	for _, name := range []string{"sem_acquire", "sem_release", "sem_leave", "sem_heartbeat", "sem_set", "sem_drain", "sem_state"} {
		c.names[scripts.SHA(name)] = name
	}
	return c
}

func (c *semCalls) count(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[name]
}

func (c *semCalls) countOnes(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ones[name]
}

func (c *semCalls) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.calls)
	clear(c.ones)
}

func (c *semCalls) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *semCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (c *semCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if cmd.Name() != "evalsha" || len(args) < 2 {
			return next(ctx, cmd)
		}
		sha, _ := args[1].(string)
		name := c.names[sha]
		err := next(ctx, cmd)
		if name != "" {
			one := false
			if v, ok := cmd.(*redis.Cmd); ok && err == nil {
				switch r := v.Val().(type) {
				case int64:
					one = r == 1
				case []any: // a reply whose first element says what happened
					one = len(r) > 0 && r[0] == int64(1)
				}
			}
			c.mu.Lock()
			c.calls[name]++
			if one {
				c.ones[name]++
			}
			c.mu.Unlock()
		}
		return err
	}
}
