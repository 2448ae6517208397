package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/internal/roundtrip"
)

// BenchmarkUncontended takes and releases a free lock, one worker with no
// hold, for each contender in turn on one redis-server of its own: redsync
// (its defaults), bsm/redislock, rlock, rfairlock and rrwlock's write lock.
//
//	go test ./bench -run '^$' -bench Uncontended -benchtime 3000x -count 3
//
// An op is one Lock and one Unlock. go test runs the contenders in that
// order and -count repeats each back to back; for rounds that alternate,
// run the command again. Beside time per op and allocations (the
// round-trip hook's included: one per round trip, 2 per op for every
// contender) it reports:
//
//   - roundtrips/op: commands and pipelines, counted by a go-redis hook;
//   - server-µs/op: the server's time on the contender's commands, from INFO
//     commandstats before and after (see clientMicros);
//   - x-redsync-rate and x-redsync-server: ops per second and server-µs/op
//     over those of redsync's last count in the same run (none when -bench
//     leaves redsync out).
func BenchmarkUncontended(b *testing.B) {
	ctx := context.Background()
	srv := redistest.Real(b)
	cfg := benchConfig(b)
	probe := srv.Client(b) // INFO and COMMAND, seen by no hook
	noscript, err := noScript(ctx, probe)
	require.NoError(b, err)
	var redsync struct{ nsPerOp, serverUs float64 } // the baseline, once measured
	for _, ct := range named(cfg, []string{"redsync", "redislock", "rlock", "rfairlock", "rrwlock"}) {
		rdb := srv.Client(b)
		var trips roundtrip.Counter
		rdb.AddHook(&trips)
		pr, err := ct.open(rdb, cfg, "bench")
		require.NoError(b, err)
		b.Cleanup(func() { require.NoError(b, pr.close(ctx)) })
		lk := pr.handle("uncontended")
		require.NoError(b, warm(ctx, lk)) // loads the scripts
		name := ct.name
		if name == "rrwlock" {
			name = "rrwlock-write"
		}
		b.Run(name, func(b *testing.B) {
			before, err := readCommandStats(ctx, probe)
			require.NoError(b, err)
			trips.Reset()
			b.ReportAllocs()
			for b.Loop() {
				if err := lk.Lock(ctx); err != nil {
					b.Fatal(err)
				}
				if err := lk.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
			}
			after, err := readCommandStats(ctx, probe)
			require.NoError(b, err)
			n := float64(b.N)
			nsPerOp := float64(b.Elapsed().Nanoseconds()) / n
			serverUs := float64(clientMicros(before, after, noscript, trips.Commands)) / n
			b.ReportMetric(float64(trips.Load())/n, "roundtrips/op")
			b.ReportMetric(serverUs, "server-µs/op")
			switch {
			case ct.name == "redsync":
				redsync.nsPerOp, redsync.serverUs = nsPerOp, serverUs
			case redsync.nsPerOp > 0:
				b.ReportMetric(redsync.nsPerOp/nsPerOp, "x-redsync-rate")
				b.ReportMetric(serverUs/redsync.serverUs, "x-redsync-server")
			}
		})
	}
}

// benchConfig returns the bench command's defaults, its redcoord Clients
// logging warnings to stderr.
func benchConfig(b *testing.B) *config {
	cfg, err := parseConfig(nil, io.Discard)
	require.NoError(b, err)
	cfg.logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return cfg
}
