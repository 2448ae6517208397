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

// xsemWrongTypes returns setups that each leave one key of the expirable
// semaphore holding another type, or the permits hash of another kind,
// beside valid keys: a semaphore of 2 with the permit p1 held (token 1) and
// a done marker, so that every script would write if it could.
func xsemWrongTypes(ctx context.Context, rdb *redis.Client) map[string]func() {
	x := testXSem()
	valid := func(except string) {
		future := float64(time.Now().Add(time.Hour).UnixMilli())
		for key, write := range map[string]func(){
			x.Permits: func() { rdb.HSet(ctx, x.Permits, "k", "rsemaphore-expirable", "t", 2) },
			x.Leases:  func() { rdb.ZAdd(ctx, x.Leases, redis.Z{Score: future, Member: "p1"}) },
			x.Tokens:  func() { rdb.HSet(ctx, x.Tokens, "p1", 1) },
			x.Fence:   func() { rdb.HSet(ctx, x.Fence, "n", 1) },
			x.Done:    func() { rdb.ZAdd(ctx, x.Done, redis.Z{Score: future, Member: "r:z"}) },
			x.Waiters: func() { rdb.ZAdd(ctx, x.Waiters, redis.Z{Score: future, Member: "w:1"}) },
		} {
			if key != except {
				write()
			}
		}
	}
	setups := map[string]func(){
		"foreign hash at permits": func() { valid(x.Permits); rdb.HSet(ctx, x.Permits, "field", "x") },
		"counting kind":           func() { valid(x.Permits); rdb.HSet(ctx, x.Permits, "k", "rsemaphore", "a", 2, "t", 2) },
	}
	for name, key := range map[string]string{"permits": x.Permits, "leases": x.Leases, "tokens": x.Tokens,
		"fence": x.Fence, "done": x.Done, "waiters": x.Waiters} {
		setups["string at "+name] = func() { valid(key); rdb.Set(ctx, key, "x", 0) }
	}
	return setups
}

// A key of another type, or a permits hash another primitive wrote, is
// refused with ErrWrongType by every script, and every key is left as it was.
func TestXSemWrongType(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		x := testXSem()
		for name, setup := range xsemWrongTypes(ctx, rdb) {
			t.Run(name, func(t *testing.T) {
				require.NoError(t, rdb.FlushAll(ctx).Err())
				setup()
				before := snapshot(t, rdb)
				for op, call := range map[string]func() error{
					"acquire": func() error { _, err := x.Acquire(ctx, rdb, "p2", time.Minute, SemTry, time.Minute); return err },
					"retry":   func() error { _, err := x.Acquire(ctx, rdb, "p1", time.Minute, SemTry, time.Minute); return err },
					"release": func() error { _, _, err := x.Release(ctx, rdb, "p1", "r1", ""); return err },
					"leave":   func() error { _, err := x.Leave(ctx, rdb, "p1", false, time.Minute, SemUnregistered); return err },
					"try":     func() error { _, err := x.Set(ctx, rdb, stepReq(""), SetIfUnset, 3); return err },
					"set":     func() error { _, err := x.Set(ctx, rdb, stepReq(""), SetTotal, 3); return err },
					"add":     func() error { _, err := x.Set(ctx, rdb, stepReq(""), AddTotal, 1); return err },
					"state":   func() error { _, err := x.State(ctx, rdb); return err },
				} {
					assert.ErrorIs(t, call(), errs.ErrWrongType, op)
				}
				assert.Equal(t, before, snapshot(t, rdb), "keys changed")
			})
		}
	})
}

// Extend (the watchdog's renewal) of a held permit is refused like every
// other script, and changes nothing: without its key check, xsem_extend
// would extend the lease beside a foreign permits, fence or done key, and
// PEXPIRE a foreign key at tokens.
func TestXSemExtendWrongType(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		for name, setup := range xsemWrongTypes(ctx, rdb) {
			t.Run(name, func(t *testing.T) {
				require.NoError(t, rdb.FlushAll(ctx).Err())
				setup()
				before := snapshot(t, rdb)
				ok, err := testXSem().Extend(ctx, rdb, extendReq(), "p1", time.Minute)
				assert.ErrorIs(t, err, errs.ErrWrongType, "extend replied %v", ok)
				assert.Equal(t, before, snapshot(t, rdb), "keys changed")
			})
		}
	})
}
