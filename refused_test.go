package redcoord_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/internal/scripts"
	"github.com/redcoord/redcoord/relection"
	"github.com/redcoord/redcoord/rlock"
	"github.com/redcoord/redcoord/rsemaphore"
)

// A server whose ACL denies a command the library needs gets one warning
// per Client that names the command, what stops working and what to do;
// an operation that the refusal makes fail returns an error that matches
// ErrRefused, names the command and the operation, wraps Redis's reply,
// and leaves Redis as it was. Refusals that cost only wake-ups (PUBLISH,
// SUBSCRIBE) leave the operations working.
func TestRefusedCommand(t *testing.T) {
	srv := redistest.Real(t)
	ctx := context.Background()
	admin := srv.Client(t)
	lock := func(c *redcoord.Client) error { return rlock.New(c, "orders").Lock(ctx) }
	for _, c := range []struct {
		deny    string   // the ACL rule
		keys    string   // the keys and channels allowed; "" for all
		loaded  bool     // load every script first
		warns   []string // what the warning says; nil: no warning
		opts    []redcoord.Option
		op      func(c *redcoord.Client) error // nil: the operations work
		names   []string                       // what op's error says
		matches []error                        // what else op's error matches
	}{
		{deny: "-time", warns: []string{"TIME inside a script", "every script reads the server's clock", "+time"},
			op: lock, names: []string{"TIME inside a script", "acquire", `rlock "orders"`}},
		{deny: "-evalsha", warns: []string{"EVALSHA", "+evalsha"},
			op: func(c *redcoord.Client) error {
				s := rsemaphore.New(c, "pool")
				_, err := s.TrySetPermits(ctx, 3)
				return err
			}, names: []string{"EVALSHA", `rsemaphore "pool"`}},
		{deny: "-xadd", warns: []string{"XADD inside a script", "relection", "+xadd"},
			op: func(c *redcoord.Client) error {
				return relection.New(c, "leader").Campaign(ctx, "me")
			}, names: []string{"XADD inside a script", `relection "leader"`}},
		{deny: "-wait", warns: []string{"WAIT", "WithWaitReplicas", "+wait"},
			opts: []redcoord.Option{redcoord.WithWaitReplicas(1, 50*time.Millisecond)},
			op:   lock, names: []string{"WAIT", "refused by the server", `rlock "orders"`, "the acquire was undone"},
			matches: []error{redcoord.ErrNotAcquired, redcoord.ErrNotReplicated}},
		// The scripts are loaded, by another user: the operations work.
		{deny: "-script", warns: []string{"SCRIPT LOAD", "+script|load"}, loaded: true},
		{deny: "-publish", warns: []string{"PUBLISH inside a script", "waiters are not woken", "+publish"}},
		{deny: "-subscribe", warns: []string{"SUBSCRIBE", "waits poll", "WithPolling"}},
		// docs/operating.md's narrow user: nothing refused.
		{deny: "-@dangerous", keys: "rc:*"},
	} {
		t.Run(c.deny, func(t *testing.T) {
			user := "u" + c.deny
			keys := c.keys
			if keys == "" {
				keys = "*"
			}
			require.NoError(t, admin.Do(ctx, "acl", "setuser", user, "on", ">pw", "~"+keys, "&"+keys, "+@all",
				c.deny).Err())
			require.NoError(t, admin.FlushAll(ctx).Err())
			if c.loaded {
				for _, s := range scripts.All() {
					require.NoError(t, s.Load(ctx, admin).Err())
				}
			}
			rdb := srv.Client(t, func(o *redis.Options) { o.Username, o.Password = user, "pw" })
			log := &logBuffer{}
			opts := append([]redcoord.Option{redcoord.WithLogger(slog.New(slog.NewTextHandler(log, nil)))}, c.opts...)
			cl, err := redcoord.New(rdb, opts...)
			require.NoError(t, err)
			for i := 0; i < 2; i++ {
				if c.op == nil {
					mu := rlock.New(cl, "orders")
					require.NoError(t, mu.Lock(ctx))
					require.NoError(t, mu.Unlock(ctx))
					continue
				}
				err := c.op(cl)
				require.ErrorIs(t, err, redcoord.ErrRefused)
				for _, m := range c.matches {
					assert.ErrorIs(t, err, m)
				}
				for _, w := range c.names {
					assert.ErrorContains(t, err, w)
				}
				assert.NotContains(t, err.Error(), "@user_script", "no script's location")
				var reply redis.Error
				assert.True(t, errors.As(err, &reply), "Redis's reply is wrapped: %v", err)
				left := mustKeys(t, admin, "rc:*")
				for _, k := range left {
					assert.NotContains(t, k, ":lock", "nothing held")
				}
				switch c.deny {
				case "-wait": // the acquire was undone; the release's marker stays
				case "-xadd": // the fence's counter moved on; the leave's marker stays
				default:
					assert.Empty(t, left, "a refused script changes nothing")
				}
			}
			require.NoError(t, cl.Close(ctx)) // waits for the server check
			assert.Empty(t, mustKeys(t, admin, "rc:{redcoord-check}*"), "the check leaves nothing behind")
			warns := log.lines("WARN")
			if c.warns == nil {
				assert.Empty(t, warns)
				return
			}
			require.Len(t, warns, 1, "one warning, however many operations: %v", warns)
			for _, w := range append(c.warns, "the server refuses", "addr="+srv.Addr) {
				assert.Contains(t, warns[0], w)
			}
		})
	}
}

func mustKeys(t *testing.T, rdb *redis.Client, pattern string) []string {
	keys, err := rdb.Keys(context.Background(), pattern).Result()
	require.NoError(t, err)
	return keys
}

// On Cluster every primary is checked: one warning per command refused,
// naming every primary that refuses it.
func TestRefusedCommandCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 0)
	ctx := context.Background()
	masters := cl.Masters()
	for _, addr := range masters {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		require.NoError(t, rdb.Do(ctx, "acl", "setuser", "u", "on", ">pw", "~*", "&*", "+@all",
			"-spublish", "-ssubscribe").Err())
		require.NoError(t, rdb.Close())
	}
	log := checkedLogOf(t, cl.Client(t, func(o *redis.ClusterOptions) { o.Username, o.Password = "u", "pw" }))
	warns := log.lines("WARN")
	require.Len(t, warns, 2, "%v", warns)
	for i, command := range []string{"SPUBLISH inside a script", "SSUBSCRIBE"} {
		assert.Contains(t, warns[i], "the server refuses "+command)
		for _, addr := range masters {
			assert.Contains(t, warns[i], addr)
		}
	}
	assert.True(t, strings.Contains(warns[1], "command=SSUBSCRIBE"), warns[1])
}

// A name is the user's text, and the scripts' own errors name its keys
// (WRONGTYPE, a fence out of range): a name that has the words of a
// refusal in it ("noperm", "ACL failure in script") still gets the error
// of what happened, not ErrRefused.
func TestRefusedWordsInAName(t *testing.T) {
	srv := redistest.Real(t)
	ctx := context.Background()
	admin := srv.Client(t)
	c, err := redcoord.New(admin)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(ctx) })
	for _, name := range []string{"noperm jobs", "ACL failure in script"} {
		m := rlock.New(c, name)
		require.NoError(t, m.Lock(ctx))
		err := relection.New(c, name).Campaign(ctx, "me")
		assert.ErrorIs(t, err, redcoord.ErrWrongType, "%s", name)
		assert.NotErrorIs(t, err, redcoord.ErrRefused, "%s", name)
		require.NoError(t, m.Unlock(ctx))

		require.NoError(t, admin.HSet(ctx, "rc:{"+name+"}:fence", "n", "9007199254740992").Err())
		err = rlock.New(c, name).Lock(ctx)
		assert.ErrorContains(t, err, "holds no token below 2^53", "%s", name)
		assert.NotErrorIs(t, err, redcoord.ErrRefused, "%s", name)
	}
}
