package relection_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/relection"
)

// A leader whose process dies (its Client closed without Resign) is
// replaced by the longest-waiting live candidate when its lease runs out,
// the Client's lease TTL after its last renewal; a candidate that died
// while waiting is skipped. Observers, polling once an hour, see each new
// leader at the instant it leads: by pub/sub.
func TestDeadLeaderIsReplaced(t *testing.T) {
	locktest.InBubble(t, 5, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		const ttl = 30 * time.Second // the Client's default lease TTL
		leader := relection.New(ps[0].C, "svc")
		require.NoError(t, leader.Campaign(ctx, "p0"))
		octx, stop := context.WithCancel(ctx)
		defer stop()
		seen := relection.New(ps[4].C, "svc", relection.WithMaxPollInterval(time.Hour)).Observe(octx)
		assert.Equal(t, "p0", (<-seen).Value)

		done := make([]chan error, 4)
		for i := 1; i <= 3; i++ {
			done[i] = make(chan error, 1)
			e := relection.New(ps[i].C, "svc", relection.WithMaxPollInterval(time.Hour))
			go func() { done[i] <- e.Campaign(ctx, "p"+string(rune('0'+i))) }()
			synctest.Wait()
		}
		ps[1].Kill() // the first candidate dies while it waits
		time.Sleep(time.Second)
		ps[0].Kill() // the leader dies, a second after its last renewal at the latest
		died := time.Now()
		synctest.Wait()
		assert.Error(t, <-done[1], "the dead candidate's Campaign ended")

		require.NoError(t, <-done[2])
		replaced := time.Since(died)
		assert.LessOrEqual(t, replaced, ttl, "replaced within a lease TTL of the leader's last renewal")
		l := <-seen
		assert.Equal(t, "p2", l.Value, "the longest-waiting live candidate leads")
		assert.Zero(t, time.Since(died)-replaced, "the observer saw it at once")
		assert.Empty(t, done[3], "the next candidate still waits")
		t.Logf("replaced %v after the leader died (lease TTL %v)", replaced, ttl)
	})
}

// A leader cut off from Redis (its connections drop every byte) sees Lost
// and its Context cancelled before its lease can have run out in Redis, by
// the watchdog's clock; the candidate leads once it has run out, in a
// later term.
func TestPartitionedLeaderSeesLost(t *testing.T) {
	locktest.InBubble(t, 2, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		const ttl = 30 * time.Second
		leader := relection.New(ps[0].C, "svc")
		require.NoError(t, leader.Campaign(ctx, "p0"))
		term := leader.Token()
		work, cancel := leader.Context(ctx)
		defer cancel()
		next := relection.New(ps[1].C, "svc")
		done := make(chan error, 1)
		go func() { done <- next.Campaign(ctx, "p1") }()
		synctest.Wait()

		time.Sleep(ttl / 3) // just after a renewal
		ps[0].Faults.Stall()
		cut := time.Now()
		<-leader.Lost()
		lostAfter := time.Since(cut)
		<-work.Done()
		assert.ErrorIs(t, context.Cause(work), redcoord.ErrLeaseLost)
		require.NoError(t, <-done)
		ledAfter := time.Since(cut)
		assert.Less(t, lostAfter, ledAfter, "the old leader knew before the new one led")
		assert.LessOrEqual(t, ledAfter, ttl, "the new leader leads within a lease TTL")
		assert.Greater(t, next.Token(), term)
		t.Logf("cut off: Lost after %v, next leader after %v (lease TTL %v)", lostAfter, ledAfter, ttl)
		ps[0].Faults.Unstall()
	})
}
