package scripts

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/redistest"
)

// argsHook keeps the arguments of every command it sees.
type argsHook struct {
	mu   sync.Mutex
	seen [][]any
}

func (h *argsHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *argsHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *argsHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.mu.Lock()
		h.seen = append(h.seen, cmd.Args())
		h.mu.Unlock()
		return next(ctx, cmd)
	}
}

// A prepared call whose script Redis lost (SCRIPT FLUSH, a restart, a
// failover) loads it with SCRIPT LOAD and sends the same EVALSHA once
// more; the body is never sent with EVAL.
func TestCallLoadsLostScript(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		h := &argsHook{}
		rdb.AddHook(h)
		l := testLock("a").Prepared(time.Minute)
		require.NoError(t, rdb.ScriptFlush(ctx).Err())
		h.mu.Lock()
		h.seen = nil
		h.mu.Unlock()
		a, err := l.Acquire(ctx, rdb, "a:1", NoToken, NewLeaseArg(time.Minute, nil), NoRegistry)
		require.NoError(t, err)
		assert.True(t, a.OK)
		h.mu.Lock()
		seen := h.seen
		h.mu.Unlock()
		var names []string
		for _, args := range seen {
			names = append(names, strings.ToLower(fmt.Sprint(args[0]))+" "+strings.ToLower(fmt.Sprint(args[1])))
		}
		sha := lockAcquire.Hash()
		assert.Equal(t, []string{"evalsha " + sha, "script load", "evalsha " + sha}, names)
		loaded, err := rdb.ScriptExists(ctx, sha).Result()
		require.NoError(t, err)
		assert.Equal(t, []bool{true}, loaded, "the script is cached again")
	})
}

// When the server refuses SCRIPT LOAD (an ACL), a call whose script it
// lost fails with the load's error, which says why, not with NOSCRIPT;
// prepared or not, and wrapped as any script's error is.
func TestRefusedLoadSaysWhy(t *testing.T) {
	srv := redistest.Real(t)
	ctx := context.Background()
	admin := srv.Client(t)
	require.NoError(t, admin.Do(ctx, "acl", "setuser", "noload", "on", ">pw", "~*", "&*", "+@all", "-script|load").Err())
	rdb := srv.Client(t, func(o *redis.Options) { o.Username, o.Password = "noload", "pw" })
	require.NoError(t, admin.ScriptFlush(ctx).Err())
	l := testLock("a")
	_, err := l.Prepared(time.Minute).Acquire(ctx, rdb, "a:1", NoToken, NewLeaseArg(time.Minute, nil), NoRegistry)
	require.Error(t, err)
	_, err2 := l.State(ctx, rdb)
	require.Error(t, err2)
	for _, err := range []error{err, err2} {
		assert.ErrorContains(t, err, "SCRIPT LOAD")
		assert.ErrorContains(t, err, "NOPERM")
		assert.NotContains(t, err.Error(), "NOSCRIPT No matching script")
		var rerr redis.Error
		assert.ErrorAs(t, err, &rerr, "Redis's error is kept")
		var e *errs.Error
		assert.ErrorAs(t, err, &e)
	}
}

// A script carries the library definitions it uses, directly or through
// another definition, and no other.
func TestLoadKeepsWhatIsUsed(t *testing.T) {
	has := func(s *Script, def string) bool { return strings.Contains(s.src, "local function "+def+"(") }
	assert.True(t, has(lockAcquire, "next_token"))
	assert.True(t, has(lockAcquire, "server_time"), "used by next_token")
	assert.Contains(t, lockAcquire.src, "local FENCE_TTL_MS", "used by next_token")
	assert.False(t, has(lockAcquire, "wake_all"))
	assert.True(t, has(lockRelease, "notify"))
	assert.False(t, has(lockRelease, "next_token"))
	assert.True(t, has(rwWrite, "rw_check_write_keys"))
	assert.True(t, has(rwWrite, "check_kind"), "used by rw_check_write_keys")

	defs := definitions("x.lua", "-- header\n\n-- a\nlocal A, B = 1, 2\n\nlocal function f()\n  return A\nend\n")
	require.Len(t, defs, 2)
	assert.Equal(t, []string{"A", "B"}, defs[0].names)
	assert.Equal(t, "local function f()\n  return A\nend\n\n\n", used(defs, "return f()")[len("-- a\nlocal A, B = 1, 2\n\n"):])
	assert.Empty(t, used(defs, "return 1"))
	assert.Panics(t, func() { definitions("x.lua", "-- header\n\nlocal A = 1\n\n  return A\n") }, "a paragraph that defines nothing")
}

// An error from a script names the operation, not the script.
func TestWrapNamesTheOperation(t *testing.T) {
	cause := errors.New("ERR something")
	assert.Equal(t, "redcoord: acquire: ERR something", fairLock.acquire.wrap(cause).Error())
	assert.Equal(t, "redcoord: release: ERR something", lockRelease.wrap(cause).Error())
	err := lockAcquire.wrap(errors.New("WRONGTYPE Operation against a key holding the wrong kind of value script: abc, on @user_script:1."))
	assert.ErrorIs(t, err, errs.ErrWrongType)
	assert.Equal(t, "redcoord: key holds another type: acquire: Operation against a key holding the wrong kind of value", err.Error())
}
