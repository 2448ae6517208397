package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/internal/roundtrip"
)

// BenchmarkUncontended takes and releases a free lock, one worker with no
// hold, for each contender in turn on one redis-server of its own: redsync
// (its defaults), bsm/redislock, rlock, rfairlock and rrwlock's write lock.
//
//	go test ./bench -run '^$' -bench 'Uncontended$' -benchtime 3000x -count 3
//
// An op is one Lock and one Unlock. Beside time per op and allocations (the
// round-trip hook's included: one per round trip, 2 per op for every
// contender) it reports:
//
//   - roundtrips/op: commands and pipelines, counted by a go-redis hook;
//   - server-µs/op: the server's time on the contender's commands, from INFO
//     commandstats before and after (see clientMicros).
//
// The contenders run one after the other, so a machine whose load changes
// during the run skews their comparison: BenchmarkUncontendedRatio gives the
// ratios.
func BenchmarkUncontended(b *testing.B) {
	ctx := context.Background()
	srv := redistest.Real(b)
	probe := srv.Client(b) // INFO and COMMAND, seen by no hook
	noscript, err := noScript(ctx, probe)
	require.NoError(b, err)
	for _, u := range openUncontended(b, srv) {
		b.Run(u.name, func(b *testing.B) {
			before, err := readCommandStats(ctx, probe)
			require.NoError(b, err)
			u.trips.Reset()
			b.ReportAllocs()
			for b.Loop() {
				if err := u.cycle(ctx); err != nil {
					b.Fatal(err)
				}
			}
			after, err := readCommandStats(ctx, probe)
			require.NoError(b, err)
			n := float64(b.N)
			b.ReportMetric(float64(u.trips.Load())/n, "roundtrips/op")
			b.ReportMetric(float64(clientMicros(before, after, noscript, u.trips.Commands))/n, "server-µs/op")
		})
	}
}

// BenchmarkUncontendedRatio compares the contenders of BenchmarkUncontended
// with redsync in rounds: an op is a batch of uncontendedBatch Lock+Unlock
// cycles of each contender in turn, starting each round with the next one,
// so that they share the machine's moments alike.
//
//	go test ./bench -run '^$' -bench UncontendedRatio -benchtime 80x -count 3
//
// For each contender but redsync it reports <name>-x-redsync-rate (its
// cycles per second over redsync's) and <name>-x-redsync-server (its
// server-µs per cycle over redsync's, see BenchmarkUncontended).
func BenchmarkUncontendedRatio(b *testing.B) {
	ctx := context.Background()
	srv := redistest.Real(b)
	probe := srv.Client(b)
	noscript, err := noScript(ctx, probe)
	require.NoError(b, err)
	us := openUncontended(b, srv)
	require.Equal(b, "redsync", us[0].name, "the baseline runs")
	elapsed := make([]time.Duration, len(us))
	server := make([]int64, len(us))
	for round := 0; b.Loop(); round++ {
		for j := range us {
			// Each round starts with the next contender, so that none is
			// always first after the others' batches.
			i := (round + j) % len(us)
			u := us[i]
			before, err := readCommandStats(ctx, probe)
			require.NoError(b, err)
			start := time.Now()
			for range uncontendedBatch {
				if err := u.cycle(ctx); err != nil {
					b.Fatal(err)
				}
			}
			elapsed[i] += time.Since(start)
			after, err := readCommandStats(ctx, probe)
			require.NoError(b, err)
			server[i] += clientMicros(before, after, noscript, u.trips.Commands)
		}
	}
	for i, u := range us[1:] {
		b.ReportMetric(float64(elapsed[0])/float64(elapsed[i+1]), u.name+"-x-redsync-rate")
		b.ReportMetric(float64(server[i+1])/float64(server[0]), u.name+"-x-redsync-server")
	}
}

// uncontendedBatch is how many cycles of one contender a round of
// BenchmarkUncontendedRatio runs back to back.
const uncontendedBatch = 50

// uncontended is one contender of the uncontended benchmarks: a handle on
// its own go-redis client, whose round trips a hook counts.
type uncontended struct {
	name  string
	lk    locker
	trips *roundtrip.Counter
}

// cycle takes and releases the lock once.
func (u uncontended) cycle(ctx context.Context) error {
	if err := u.lk.Lock(ctx); err != nil {
		return err
	}
	return u.lk.Unlock(ctx)
}

// openUncontended opens the contenders the -bench flag names (all but
// redsync may be left out), each warmed up so that its scripts are loaded.
func openUncontended(b *testing.B, srv *redistest.Server) []uncontended {
	ctx := context.Background()
	cfg := benchConfig(b)
	var out []uncontended
	for _, ct := range named(cfg, []string{"redsync", "redislock", "rlock", "rfairlock", "rrwlock"}) {
		rdb := srv.Client(b)
		trips := &roundtrip.Counter{}
		rdb.AddHook(trips)
		pr, err := ct.open(rdb, cfg, "bench")
		require.NoError(b, err)
		b.Cleanup(func() { require.NoError(b, pr.close(ctx)) })
		lk := pr.handle("uncontended")
		require.NoError(b, warm(ctx, lk))
		name := ct.name
		if name == "rrwlock" {
			name = "rrwlock-write"
		}
		out = append(out, uncontended{name: name, lk: lk, trips: trips})
	}
	return out
}

// benchConfig returns the bench command's defaults, its redcoord Clients
// logging warnings to stderr.
func benchConfig(b *testing.B) *config {
	cfg, err := parseConfig(nil, io.Discard)
	require.NoError(b, err)
	cfg.logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return cfg
}
