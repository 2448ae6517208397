package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/internal/roundtrip"
)

func TestCommandStatsParse(t *testing.T) {
	s := commandStats{}
	s.add("# Commandstats\r\n" +
		"cmdstat_set:calls=3,usec=16,usec_per_call=5.33,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_client|setinfo:calls=2,usec=4,usec_per_call=2.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_evalsha:calls=1,usec=105,usec_per_call=105.00,rejected_calls=1,failed_calls=0\r\n")
	s.add("cmdstat_set:calls=1,usec=4,usec_per_call=4.00\r\n") // a second master
	require.Equal(t, commandStats{"set": {4, 20}, "client|setinfo": {2, 4}, "evalsha": {1, 105}}, s)
}

func TestClientMicros(t *testing.T) {
	before := commandStats{"evalsha": {10, 1000}, "set": {5, 50}}
	after := commandStats{
		"evalsha":        {20, 3000}, // 10 calls, 2000µs: the clients sent them
		"set":            {25, 250},  // 20 calls, 200µs: 5 sent, 15 inside the scripts
		"hget":           {10, 30},   // only inside the scripts
		"info":           {3, 90},    // the harness's own, which no hook counts
		"subscribe":      {2, 40},    // noscript, seen by no hook
		"client|setinfo": {1, 7},     // noscript by its container
	}
	noscript := map[string]bool{"evalsha": true, "subscribe": true, "client": true}
	sent := map[string]int64{"evalsha": 10, "set": 5}
	got := clientMicros(before, after, noscript, func(n string) int64 { return sent[n] })
	require.Equal(t, int64(2000+50+40+7), got)
}

// TestClientMicrosRealServer: a script's inner commands are not counted a
// second time, a command the client sent is.
func TestClientMicrosRealServer(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Real(t)
	probe := srv.Client(t)
	noscript, err := noScript(ctx, probe)
	require.NoError(t, err)
	require.True(t, noscript["evalsha"] && noscript["subscribe"], "%v", noscript)
	require.False(t, noscript["set"])

	rdb := srv.Client(t)
	var trips roundtrip.Counter
	rdb.AddHook(&trips)
	require.NoError(t, rdb.Ping(ctx).Err()) // the connection's handshake, before the count
	before, err := readCommandStats(ctx, probe)
	require.NoError(t, err)
	for range 50 {
		require.NoError(t, rdb.Eval(ctx, "redis.call('SET', KEYS[1], 1); return redis.call('GET', KEYS[1])", []string{"k"}).Err())
		require.NoError(t, rdb.Set(ctx, "k", 2, 0).Err())
	}
	after, err := readCommandStats(ctx, probe)
	require.NoError(t, err)
	got := clientMicros(before, after, noscript, trips.Commands)
	d := func(name string) int64 { return after[name].usec - before[name].usec }
	require.Equal(t, int64(100), after["set"].calls-before["set"].calls, "50 in the script, 50 sent")
	require.Equal(t, int64(50), after["get"].calls-before["get"].calls)
	require.Equal(t, d("eval")+d("set")*50/100, got)
	require.Less(t, got, d("eval")+d("set")+d("get"))
}
