package relection_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/relection"
)

// candidate is an Election as the helpers of exclusive holds see it
// (internal/locktest): Lock campaigns, Unlock resigns.
type candidate struct{ *relection.Election }

func (c candidate) Lock(ctx context.Context) error   { return c.Campaign(ctx, "candidate") }
func (c candidate) Unlock(ctx context.Context) error { return c.Resign(ctx) }

func newCandidate(c *redcoord.Client, name string) locktest.Exclusive {
	return candidate{relection.New(c, name)}
}

// handOff runs, on each name, a leader in cs[0] and a candidate in cs[1]
// while an observer in cs[1] polls once an hour: the Resign hands the lead
// on, and the observer sees nobody, both leaders, then nobody, woken by
// pub/sub. rdb reads the names' keys.
func handOff(t *testing.T, rdb redis.Cmdable, cs []*redcoord.Client, names []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, name := range names {
		seen := relection.New(cs[1], name, relection.WithMaxPollInterval(time.Hour)).Observe(ctx)
		assert.Zero(t, (<-seen).Term, "nobody leads yet")
		first := relection.New(cs[0], name)
		require.NoError(t, first.Campaign(ctx, "a"), name)
		next := relection.New(cs[1], name, relection.WithMaxPollInterval(time.Hour))
		done := make(chan error, 1)
		go func() { done <- next.Campaign(ctx, "b") }()
		locktest.Eventually(t, func() bool {
			return rdb.Exists(ctx, "rc:{"+name+"}:elect-queue").Val() == 1
		}, "the candidate queued")
		require.NoError(t, first.Resign(ctx), name)
		require.NoError(t, <-done, name)
		assert.Equal(t, "a", (<-seen).Value, name)
		l := <-seen
		assert.Equal(t, "b", l.Value, name)
		assert.Equal(t, next.Token(), l.Term, name)
		assert.Greater(t, l.Term, first.Token(), name)
		require.NoError(t, next.Resign(ctx), name)
		assert.Zero(t, (<-seen).Term, "nobody leads after the last Resign")
	}
}

// On one cluster of 3 masters: mutual exclusion of leaders over names that
// every master serves, a slot moved while candidates wait
// (locktest.ClusterSuite), and a hand-off observed on a name on each
// master: every key, the log and the channels in the name's slot.
func TestCluster(t *testing.T) {
	locktest.ClusterSuite(t, newCandidate, func(t *testing.T, cl *redistest.Cluster) {
		var names []string
		seen := map[string]bool{}
		for i := 0; len(seen) < 3 && i < 300; i++ {
			name := fmt.Sprintf("elect-%d", i)
			if m := cl.MasterFor("rc:{" + name + "}:lock"); m != "" && !seen[m] {
				seen[m] = true
				names = append(names, name)
			}
		}
		require.Len(t, names, 3, "a name on each master")
		rdb := cl.Client(t)
		handOff(t, rdb, []*redcoord.Client{locktest.NewClient(t, rdb), locktest.NewClient(t, cl.Client(t))}, names)
	})
}

// A leader through failovers, on Cluster and Sentinel, as the locks'
// (locktest.FailoverSuites, without the trials that count double grants).
func TestFailover(t *testing.T) { locktest.FailoverSuites(t, newCandidate, 0, 0) }

// Through Sentinel, as on one server.
func TestSentinel(t *testing.T) {
	s := redistest.StartSentinel(t)
	rdb := s.FailoverClient(t)
	cs := []*redcoord.Client{locktest.NewClient(t, rdb), locktest.NewClient(t, s.FailoverClient(t))}
	handOff(t, rdb, cs, []string{"a", "b"})
}
