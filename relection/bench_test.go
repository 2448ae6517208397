package relection_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/relection"
)

// childAddrEnv is set only in the candidate process of BenchmarkHandOff.
const childAddrEnv = "REDCOORD_HANDOFF_CHILD_ADDR"

// TestHandOffChild is the candidate process of BenchmarkHandOff, and
// returns at once anywhere else: for each line on its stdin (at most
// 10,000) it campaigns, reports the instant its Campaign returned ("led
// <unix ns>") and resigns at once; it returns when stdin closes.
func TestHandOffChild(t *testing.T) {
	addr := os.Getenv(childAddrEnv)
	if addr == "" {
		return
	}
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	c, err := redcoord.New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	e := relection.New(c, "bench")
	in := bufio.NewScanner(os.Stdin)
	for i := 0; i < 10000 && in.Scan(); i++ {
		if err := e.Campaign(ctx, "child"); err != nil {
			t.Fatal(err)
		}
		fmt.Println("led", time.Now().UnixNano())
		if err := e.Resign(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkHandOff measures, on a real redis-server, the time from the
// call to a leader's Resign to the return of the next candidate's
// Campaign in another process (this test binary run again as
// TestHandOffChild), p50 and max, beside one idle EVALSHA round trip (a
// Leader) measured in the same run: one sent after a millisecond of
// idleness, as a Resign is (the server's and the client's threads are
// asleep then, and waking them costs more than the round trip itself on a
// small VM; see rfairlock's BenchmarkFairVsUnfair). Each iteration is one
// hand-off from this process to the child. resign-p50-µs is the Resign
// call's own time: the grant and the Resign's reply leave Redis together,
// so it bounds the hand-off from below (handoff-p50/resign), and
// resign-p50/rtt compares it with the idle round trip of a light script.
func BenchmarkHandOff(b *testing.B) {
	srv := redistest.Real(b)
	rdb := srv.Client(b)
	ctx := context.Background()
	e := relection.New(locktest.NewClient(b, srv.Client(b)), "bench")

	var rtts []time.Duration
	for range 200 {
		time.Sleep(time.Millisecond)
		t0 := time.Now()
		if _, _, err := e.Leader(ctx); err != nil {
			b.Fatal(err)
		}
		rtts = append(rtts, time.Since(t0))
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestHandOffChild$", "-test.bench=^$", "-test.count=1", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), childAddrEnv+"="+srv.Addr)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	}()
	lines := bufio.NewScanner(out)
	led := func() time.Time {
		for lines.Scan() {
			if ns, ok := strings.CutPrefix(lines.Text(), "led "); ok {
				n, err := strconv.ParseInt(ns, 10, 64)
				if err != nil {
					b.Fatal(err)
				}
				return time.Unix(0, n)
			}
		}
		b.Fatalf("the candidate process ended: %v", lines.Err())
		return time.Time{}
	}

	var gaps, resigns []time.Duration
	for b.Loop() {
		if err := e.Campaign(ctx, "parent"); err != nil {
			b.Fatal(err)
		}
		if _, err := fmt.Fprintln(stdin, "go"); err != nil {
			b.Fatal(err)
		}
		locktest.Eventually(b, func() bool { return candidates(ctx, rdb, "bench") == 1 }, "the child queued")
		time.Sleep(time.Millisecond) // and waiting on its Hub
		t0 := time.Now()
		if err := e.Resign(ctx); err != nil {
			b.Fatal(err)
		}
		resigns = append(resigns, time.Since(t0))
		gaps = append(gaps, led().Sub(t0))
	}
	b.StopTimer()
	rtt := locktest.Quantile(rtts, 0.5)
	b.ReportMetric(float64(rtt.Microseconds()), "idle-rtt-p50-µs")
	b.ReportMetric(float64(locktest.Quantile(gaps, 0.5).Microseconds()), "handoff-p50-µs")
	b.ReportMetric(float64(locktest.Quantile(gaps, 1).Microseconds()), "handoff-max-µs")
	b.ReportMetric(float64(locktest.Quantile(gaps, 0.5))/float64(rtt), "handoff-p50/rtt")
	resign := locktest.Quantile(resigns, 0.5)
	b.ReportMetric(float64(resign.Microseconds()), "resign-p50-µs")
	// The grant leaves Redis with the Resign's reply: the Resign's own
	// round trip, its script's time included, is the hand-off's floor.
	b.ReportMetric(float64(locktest.Quantile(gaps, 0.5))/float64(resign), "handoff-p50/resign")
	b.ReportMetric(float64(resign)/float64(rtt), "resign-p50/rtt")
	b.ReportMetric(0, "ns/op") // the loop's time includes queueing the candidate; the figures above say what matters
}
