package relection_test

import (
	"context"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/relection"
)

// A candidate granted the lead by a Resign leads as soon as it reads the
// grant, without a round trip: nothing but the lease ends an election's
// grant before its candidate sees it. The watchdog then renews the term
// as any other, and the term is the one the fence handed out.
func TestDeliveredGrantLeadsWithoutARoundTrip(t *testing.T) {
	locktest.InBubble(t, 2, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		e0 := relection.New(ps[0].C, "svc")
		e1 := relection.New(ps[1].C, "svc")
		require.NoError(t, e0.Campaign(ctx, "e0"))
		done := make(chan error, 1)
		go func() { done <- e1.Campaign(ctx, "e1") }()
		synctest.Wait() // queued, subscribed, asleep

		ps[1].RT.Reset()
		resigned := time.Now()
		require.NoError(t, e0.Resign(ctx))
		require.NoError(t, <-done)
		assert.Zero(t, time.Since(resigned), "the grant wakes the candidate at once")
		assert.Zero(t, ps[1].RT.Load(), "the grant message is the lead: no round trip")
		assert.Equal(t, strconv.FormatUint(e1.Token(), 10), mr.HGet("rc:{svc}:fence", "n"))

		ttl := ps[1].C.LeaseTTL()
		time.Sleep(2 * ttl) // the watchdog renews the term
		synctest.Wait()
		assert.False(t, locktest.IsClosed(e1.Lost()), "the term was lost: its lease was not renewed")
		l, ok, err := e0.Leader(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, e1.Token(), l.Term)
		require.NoError(t, e1.Resign(ctx))
	})
}

// A grant whose message arrives late, more than a watchdog tick after the
// grant, leads too, and stays led: it is confirmed in Redis first, as a
// late reply is, and renewed by the watchdog from then.
func TestLateGrantMessageLeads(t *testing.T) {
	locktest.InBubble(t, 2, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		e0 := relection.New(ps[0].C, "svc")
		e1 := relection.New(ps[1].C, "svc", relection.WithMaxPollInterval(time.Hour))
		require.NoError(t, e0.Campaign(ctx, "e0"))
		done := make(chan error, 1)
		go func() { done <- e1.Campaign(ctx, "e1") }()
		synctest.Wait()

		ttl := ps[1].C.LeaseTTL()
		ps[1].Faults.DelaySubscribers(ttl / 2)
		require.NoError(t, e0.Resign(ctx))
		synctest.Wait()
		time.Sleep(ttl / 2)
		synctest.Wait()
		ps[1].Faults.DelaySubscribers(0)
		require.NoError(t, <-done)
		assert.False(t, locktest.IsClosed(e1.Lost()), "the late grant was taken as lost")

		time.Sleep(2 * ttl)
		synctest.Wait()
		assert.False(t, locktest.IsClosed(e1.Lost()), "the term was lost: its lease was not renewed")
		require.NoError(t, e1.Resign(ctx))
	})
}
