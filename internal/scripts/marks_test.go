package scripts

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
)

// A release marker past its time stays until a release to zero at a server
// time whose microseconds are a multiple of 16 drops it (mark_request): the
// other releases write their marker alone. A retry of a released request
// is recognised as long as its marker stays.
func TestReleaseMarkersDroppedNowAndThen(t *testing.T) {
	srv := redistest.Mini(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	l := testLock("a")
	t0 := time.Unix(1_800_000_000, 0)
	cycle := func(at time.Duration, us int, acq, rel string) {
		t.Helper()
		srv.Mini.SetTime(t0.Add(at + time.Duration(us)*time.Microsecond))
		a, err := l.Acquire(ctx, rdb, acq, NoToken, NewLeaseArg(time.Hour, nil), NoRegistry)
		require.NoError(t, err)
		require.True(t, a.OK)
		n, _, err := l.Release(ctx, rdb, rel, false, TokenArg(believed(t, ctx, rdb, l)))
		require.NoError(t, err)
		require.Zero(t, n)
	}
	marked := func(req string) bool {
		return rdb.ZScore(ctx, l.Marks, "r:"+req).Err() == nil
	}
	cycle(0, 9, "1", "2")
	cycle(MarkerTTL/2, 9, "3", "4") // keeps the key alive past 2's time
	cycle(MarkerTTL+time.Second, 9, "5", "6")
	assert.True(t, marked("2"), "dropped with no purge")
	n, _, err := l.Release(ctx, rdb, "2", false, TokenArg(believed(t, ctx, rdb, l)))
	require.NoError(t, err)
	assert.Zero(t, n, "a retry of 2 while its marker stays")

	cycle(MarkerTTL+2*time.Second, 32, "7", "8")
	assert.False(t, marked("2"), "kept past its time by a purge")
	for _, req := range []string{"4", "6", "8"} {
		assert.True(t, marked(req), req)
	}
}

// A Client's markers key expires with its newest marker: every marker
// lives MarkerTTL, so a release to zero sets the key's TTL to MarkerTTL
// from now without reading it first (an older, longer TTL is never cut
// short: there is none), and a leave does the same.
func TestMarkersKeyExpiresWithItsNewest(t *testing.T) {
	srv := redistest.Mini(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	l := testLock("a")
	t0 := time.Unix(1_800_000_000, 0)
	ttl := func() time.Duration {
		t.Helper()
		d, err := rdb.PTTL(ctx, l.Marks).Result()
		require.NoError(t, err)
		return d
	}
	srv.Mini.SetTime(t0)
	_, err := l.Acquire(ctx, rdb, "a:1", NoToken, NewLeaseArg(time.Hour, nil), NoRegistry)
	require.NoError(t, err)
	n, _, err := l.Release(ctx, rdb, "a:2", false, TokenArg(believed(t, ctx, rdb, l)))
	require.NoError(t, err)
	require.Zero(t, n)
	assert.Equal(t, MarkerTTL, ttl())

	srv.Mini.FastForward(MarkerTTL / 2)
	srv.Mini.SetTime(t0.Add(MarkerTTL / 2))
	_, _, err = l.Leave(ctx, rdb, "a:3", false)
	require.NoError(t, err)
	assert.Equal(t, MarkerTTL, ttl(), "the leave's marker is the newest")

	srv.Mini.FastForward(MarkerTTL/2 + time.Second)
	assert.True(t, rdb.ZScore(ctx, l.Marks, "x:a:3").Err() == nil, "the key lives while its newest marker does")
	srv.Mini.FastForward(MarkerTTL / 2)
	assert.Zero(t, rdb.Exists(ctx, l.Marks).Val(), "and expires with it")
}

// A release to zero and a leave write their marker with a ZADD and a
// PEXPIRE, and read no TTL (redis-server counts the commands scripts call).
func TestMarkersWrittenWithoutPTTL(t *testing.T) {
	srv := redistest.Real(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	l := testLock("a")
	a, err := l.Acquire(ctx, rdb, "a:1", NoToken, NewLeaseArg(time.Hour, nil), NoRegistry)
	require.NoError(t, err)
	require.NoError(t, rdb.ConfigResetStat(ctx).Err())
	n, _, err := l.Release(ctx, rdb, "a:2", false, TokenArg(a.Token))
	require.NoError(t, err)
	require.Zero(t, n)
	_, _, err = l.Leave(ctx, rdb, "a:3", false)
	require.NoError(t, err)
	stats := rdb.Info(ctx, "commandstats").Val()
	assert.NotContains(t, stats, "cmdstat_pttl:")
	assert.Contains(t, stats, "cmdstat_pexpire:calls=2,")
}
