package scripts

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/redistest"
)

// semWrongTypes returns setups that each leave one key of the semaphore
// holding another type, or the permits hash of another kind, beside valid
// keys: a semaphore of 2 with 1 available, a live waiter b:1 and a done
// marker, so that every script would write if it could.
func semWrongTypes(ctx context.Context, rdb *redis.Client) map[string]func() {
	s := testSem()
	valid := func(except string) {
		future := float64(time.Now().Add(time.Hour).UnixMilli())
		for key, write := range map[string]func(){
			s.Permits: func() { rdb.HSet(ctx, s.Permits, "k", "rsemaphore", "a", 1, "t", 2) },
			s.Queue:   func() { rdb.RPush(ctx, s.Queue, "b:1") },
			s.Alive:   func() { rdb.ZAdd(ctx, s.Alive, redis.Z{Score: future, Member: "b:1"}) },
			s.Waiting: func() { rdb.HSet(ctx, s.Waiting, "b:1", 1) },
			s.Done:    func() { rdb.ZAdd(ctx, s.Done, redis.Z{Score: future, Member: "r:z:1"}) },
		} {
			if key != except {
				write()
			}
		}
	}
	setups := map[string]func(){
		"foreign hash at permits": func() { valid(s.Permits); rdb.HSet(ctx, s.Permits, "field", "x") },
		"expirable kind": func() {
			valid(s.Permits)
			rdb.HSet(ctx, s.Permits, "k", "rsemaphore-expirable", "t", 2)
		},
		"list at permits": func() { valid(s.Permits); rdb.RPush(ctx, s.Permits, "x") },
	}
	for name, key := range map[string]string{"permits": s.Permits, "queue": s.Queue, "alive": s.Alive,
		"waiting": s.Waiting, "done": s.Done, "waiters": s.Waiters} {
		setups["string at "+name] = func() { valid(key); rdb.Set(ctx, key, "x", 0) }
	}
	return setups
}

// A key of another type, or a permits hash another primitive wrote, is
// refused with ErrWrongType by every script, and every key is left as it was.
func TestSemWrongType(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		s := testSem()
		for name, setup := range semWrongTypes(ctx, rdb) {
			t.Run(name, func(t *testing.T) {
				require.NoError(t, rdb.FlushAll(ctx).Err())
				setup()
				before := snapshot(t, rdb)
				for op, call := range map[string]func() error{
					"acquire": func() error { _, err := s.Acquire(ctx, rdb, "a:1", 1, SemQueue, time.Minute); return err },
					"tryacq":  func() error { _, err := s.Acquire(ctx, rdb, "a:1", 1, SemTry, time.Minute); return err },
					"register": func() error {
						_, err := s.Acquire(ctx, rdb, "a:1", 1, SemRegister, time.Minute)
						return err
					},
					"release": func() error { _, err := s.Release(ctx, rdb, "r:1", 1, ""); return err },
					"leave":   func() error { _, err := s.Leave(ctx, rdb, "b:1", 1, true, time.Minute, 0); return err },
					"try":     func() error { _, err := s.Set(ctx, rdb, stepReq(""), SetIfUnset, 3); return err },
					"set":     func() error { _, err := s.Set(ctx, rdb, stepReq(""), SetTotal, 3); return err },
					"add":     func() error { _, err := s.Set(ctx, rdb, stepReq(""), AddTotal, 1); return err },
					"drain":   func() error { _, err := s.Drain(ctx, rdb, stepReq("")); return err },
					"state":   func() error { _, err := s.State(ctx, rdb); return err },
				} {
					assert.ErrorIs(t, call(), errs.ErrWrongType, op)
				}
				assert.Equal(t, before, snapshot(t, rdb), "keys changed")
			})
		}
	})
}

// The watchdog's heartbeat of a live waiter is refused like every other
// script, and changes nothing: without its key check, sem_heartbeat would
// reply 1 or 0 and could ZADD alive and PEXPIRE a foreign key at queue or
// waiting.
func TestSemHeartbeatWrongType(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		for name, setup := range semWrongTypes(ctx, rdb) {
			t.Run(name, func(t *testing.T) {
				require.NoError(t, rdb.FlushAll(ctx).Err())
				setup()
				before := snapshot(t, rdb)
				script, keys, args := testSem().Heartbeat("b:1", time.Minute)
				reply, err := script.Run(ctx, rdb, keys, args...).Result()
				if err != nil {
					err = (&Script{name: "sem_heartbeat", Script: script}).wrap(err)
				}
				assert.ErrorIs(t, err, errs.ErrWrongType, "heartbeat replied %v", reply)
				assert.Equal(t, before, snapshot(t, rdb), "keys changed")
			})
		}
	})
}
