package rlatch_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlatch"
)

// openLatches sets a latch of 2 on each name, starts 4 waiters on each in
// two processes, counts each down from both, and checks that every waiter
// returned, woken within a poll interval of an hour: by pub/sub.
func openLatches(t *testing.T, cs []*redcoord.Client, names []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 4*len(names))
	for _, name := range names {
		ok, err := rlatch.New(cs[0], name).TrySetCount(ctx, 2)
		require.NoError(t, err, name)
		require.True(t, ok, name)
		for i := range 4 {
			l := rlatch.New(cs[i%len(cs)], name, rlatch.WithMaxPollInterval(time.Hour))
			go func() { done <- l.Wait(ctx) }()
		}
	}
	time.Sleep(200 * time.Millisecond) // every waiter subscribed
	assert.Empty(t, done, "waiters returned before the latches opened")
	for _, name := range names {
		for _, c := range cs {
			require.NoError(t, rlatch.New(c, name).CountDown(ctx), name)
		}
	}
	for range 4 * len(names) {
		require.NoError(t, <-done)
	}
}

// On a Cluster each latch's keys and channel are in its name's slot: names
// over every master open without a CROSSSLOT error, their waiters woken by
// sharded pub/sub.
func TestCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 0)
	var names []string
	seen := map[string]bool{}
	for i := 0; len(seen) < 3 && i < 300; i++ {
		name := fmt.Sprintf("latch-%d", i)
		if m := cl.MasterFor("rc:{" + name + "}:latch"); m != "" && !seen[m] {
			seen[m] = true
			names = append(names, name)
		}
	}
	require.Len(t, names, 3, "a name on each master")
	cs := []*redcoord.Client{locktest.NewClient(t, cl.Client(t)), locktest.NewClient(t, cl.Client(t))}
	openLatches(t, cs, names)
}

// Through Sentinel, as on one server.
func TestSentinel(t *testing.T) {
	s := redistest.StartSentinel(t)
	cs := []*redcoord.Client{locktest.NewClient(t, s.FailoverClient(t)), locktest.NewClient(t, s.FailoverClient(t))}
	openLatches(t, cs, []string{"a", "b"})
}
