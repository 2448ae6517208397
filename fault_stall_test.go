package redcoord_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
)

// A holder whose connections stall (the network drops its packets while
// another client still reaches Redis) sees Lost when its lease may run out
// in Redis, by its own clock: before the stalled renewal's I/O returns (with
// go-redis's default 3 s read timeout), and also when that I/O never returns
// (ReadTimeout -1, the context ignored). The delays are logged: when the
// other client took the lock and when Lost closed, after the stall began.
func TestFaultStalledConnection(t *testing.T) {
	const ttl = 900 * time.Millisecond
	s := redistest.Real(t)
	for _, tc := range []struct {
		name    string
		timeout time.Duration // go-redis ReadTimeout and WriteTimeout; 0: the default
	}{
		{"default timeouts", 0},
		{"ReadTimeout -1", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := redistest.NewFaults()
			var ioEnded atomic.Int64 // when the first stalled renewal's I/O returned, unix ns
			rdb := s.Client(t, func(o *redis.Options) {
				o.Dialer = f.Dialer(nil)
				o.ReadTimeout, o.WriteTimeout = tc.timeout, tc.timeout
				o.MaxRetries = -1
			})
			rdb.AddHook(pipelineEnd{&ioEnded})
			holder := stallClient(t, rdb, redcoord.WithLeaseTTL(ttl))
			other := stallClient(t, s.Client(t), redcoord.WithLeaseTTL(ttl))

			m := rlock.New(holder, "stall")
			require.NoError(t, m.Lock(ctx))
			lostAt := make(chan time.Time, 1)
			go func() {
				select {
				case <-m.Lost():
					lostAt <- time.Now()
				case <-time.After(20 * ttl):
					close(lostAt)
				}
			}()
			f.Stall()
			stalled := time.Now()

			o := rlock.New(other, "stall")
			octx, cancel := context.WithTimeout(ctx, 20*ttl)
			defer cancel()
			require.NoError(t, o.Lock(octx), "the other client takes the lock once the lease runs out")
			took := time.Since(stalled)
			at, ok := <-lostAt
			require.True(t, ok, "Lost never closed; the other client took the lock %v after the stall", took)
			lost := at.Sub(stalled)
			assert.Greater(t, o.Token(), m.Token(), "the new holder's token is higher")
			if end := ioEnded.Load(); end != 0 {
				assert.Less(t, at.UnixNano(), end, "Lost closed before the stalled I/O returned")
			}
			t.Logf("lease TTL %v: the other client took the lock %v after the stall, the holder's Lost closed %v after it", ttl, took, lost)
			f.Unstall()
			f.CloseAll() // the stalled connections end; nothing waits on them
			require.NoError(t, o.Unlock(ctx))
		})
	}
}

// pipelineEnd is a go-redis hook that records when the first pipeline that
// failed (a stalled renewal) returned.
type pipelineEnd struct{ at *atomic.Int64 }

func (pipelineEnd) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (pipelineEnd) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h pipelineEnd) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if err != nil {
			h.at.CompareAndSwap(0, time.Now().UnixNano())
		}
		return err
	}
}

// stallClient returns a Client on rdb, closed by t.Cleanup.
func stallClient(t *testing.T, rdb *redis.Client, opts ...redcoord.Option) *redcoord.Client {
	t.Helper()
	c, err := redcoord.New(rdb, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Close(context.Background())) })
	return c
}
