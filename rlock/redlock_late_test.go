package rlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
)

// bubbleServers runs f in a synctest bubble with n miniredis servers, each
// with its own connection (script faults armed through sf[i]) and Client
// (lease TTL ttl).
func bubbleServers(t *testing.T, n int, ttl time.Duration,
	f func(t *testing.T, ms []*miniredis.Miniredis, sf []*locktest.ScriptFaults, cs []*redcoord.Client)) {
	synctest.Test(t, func(t *testing.T) {
		ms := make([]*miniredis.Miniredis, n)
		sf := make([]*locktest.ScriptFaults, n)
		cs := make([]*redcoord.Client, n)
		for i := range n {
			m, opts := redistest.Bubble()
			defer m.Close()
			rdb := redis.NewClient(opts)
			defer rdb.Close()
			sf[i] = &locktest.ScriptFaults{}
			rdb.AddHook(sf[i])
			c, err := redcoord.New(rdb, redcoord.WithLeaseTTL(ttl))
			require.NoError(t, err)
			defer func() { require.NoError(t, c.Close(context.Background())) }()
			ms[i], cs[i] = m, c
		}
		f(t, ms, sf, cs)
	})
}

// An attempt that decides without a server's answer leaves that server's
// grant, when it comes, to be given back; a later attempt's hold on that
// server must not be touched by it. Three servers, lease 1s (100ms per
// server): server 0 is held by another owner, server 2's grant is answered
// 120ms late, after the first attempt failed and while the next is under
// way. Lock must return holding a majority for real: the lock is still on
// servers 1 and 2 once every late answer is settled, and another RedLock
// cannot take it once server 0 is free too; Unlock releases it everywhere.
func TestRedLockLateGrantDoesNotReleaseNextAttempt(t *testing.T) {
	bubbleServers(t, 3, time.Second, func(t *testing.T, ms []*miniredis.Miniredis, sf []*locktest.ScriptFaults, cs []*redcoord.Client) {
		ctx := context.Background()
		blocker := rlock.New(cs[0], "job")
		require.NoError(t, blocker.Lock(ctx))
		warm := rlock.New(cs[2], "warm") // load the scripts: only the reply is late
		require.NoError(t, warm.Lock(ctx))
		require.NoError(t, warm.Unlock(ctx))

		sf[2].DelayReply("lock_acquire", 120*time.Millisecond)
		rl := rlock.NewRedLock(cs, "job")
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second) // a bound, not a timing
		defer cancel()
		require.NoError(t, rl.Lock(lctx))
		synctest.Wait() // every late answer is settled
		for i := 1; i < 3; i++ {
			assert.True(t, ms[i].Exists("rc:{job}:lock"), "server %d holds it", i)
			assert.Equal(t, "1", ms[i].HGet("rc:{job}:lock", "c"), "server %d: a fresh hold, not a re-entry", i)
		}
		assert.Positive(t, rl.Validity())
		require.NoError(t, blocker.Unlock(ctx))
		other := rlock.NewRedLock(cs, "job")
		ok, err := other.TryLock(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "a second RedLock must not get a majority")
		if ok {
			require.NoError(t, other.Unlock(ctx))
		}
		assert.False(t, locktest.IsClosed(rl.Lost()))

		require.NoError(t, rl.Unlock(ctx))
		synctest.Wait()
		for i, m := range ms {
			assert.False(t, m.Exists("rc:{job}:lock"), "server %d released", i)
		}
	})
}

// A failed attempt whose give-back fails leaves that server's hold to a
// retired handle until its lease ends (a failed release stops its
// renewals); the next attempt, within that lease, releases it first, then
// takes every server afresh, and Unlock leaves nothing behind.
func TestRedLockFailedGiveBackIsReleasedByNextAttempt(t *testing.T) {
	bubbleServers(t, 3, time.Second, func(t *testing.T, ms []*miniredis.Miniredis, sf []*locktest.ScriptFaults, cs []*redcoord.Client) {
		ctx := context.Background()
		blockers := []*rlock.Mutex{rlock.New(cs[0], "job"), rlock.New(cs[2], "job")}
		for _, b := range blockers {
			require.NoError(t, b.Lock(ctx))
		}
		rl := rlock.NewRedLock(cs, "job")
		for _, i := range []int{0, 2} { // server 1 grants first
			sf[i].DelayReply("lock_acquire", 20*time.Millisecond)
		}
		sf[1].FailBefore("lock_release")
		ok, err := rl.TryLock(ctx)
		require.NoError(t, err)
		require.False(t, ok)
		time.Sleep(300 * time.Millisecond)
		assert.True(t, ms[1].Exists("rc:{job}:lock"), "the grant whose give-back failed lasts until its lease ends")

		for _, b := range blockers {
			require.NoError(t, b.Unlock(ctx))
		}
		require.NoError(t, rl.Lock(ctx))
		for i, m := range ms {
			assert.Equal(t, "1", m.HGet("rc:{job}:lock", "c"), "server %d: a fresh hold", i)
		}
		require.NoError(t, rl.Unlock(ctx))
		synctest.Wait()
		for i, m := range ms {
			assert.False(t, m.Exists("rc:{job}:lock"), "server %d released", i)
		}
	})
}
