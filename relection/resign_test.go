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

// A candidate whose lead was lost campaigns again and is granted the lead
// by the leader's Resign while the grant's message is in flight; its own
// Resign then (ErrLeaseLost: it ends the lost term, as documented) must
// not end the lead just granted to its Campaign and hand it on to the next
// candidate, which would leave two leaders once the Campaign reads the
// message. The Campaign leads; the next candidate waits.
func TestResignLeavesTheWaitingCampaignsGrant(t *testing.T) {
	locktest.InBubble(t, 3, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		e0 := relection.New(ps[0].C, "svc", relection.WithMaxPollInterval(time.Second))
		e1 := relection.New(ps[1].C, "svc", relection.WithMaxPollInterval(time.Second))
		e2 := relection.New(ps[2].C, "svc", relection.WithMaxPollInterval(time.Hour))
		require.NoError(t, e0.Campaign(ctx, "e0"))
		e1Done := make(chan error, 1)
		go func() { e1Done <- e1.Campaign(ctx, "e1") }()
		synctest.Wait()

		mr.Del("rc:{svc}:lock") // the lead is gone (evicted): e0 finds out at its next renewal
		time.Sleep(ps[0].C.LeaseTTL()/3 + time.Millisecond)
		synctest.Wait()
		require.True(t, locktest.IsClosed(e0.Lost()), "e0's lead was lost")
		require.NoError(t, <-e1Done, "e1 leads")

		e0Done := make(chan error, 1)
		go func() { e0Done <- e0.Campaign(ctx, "e0 again") }()
		synctest.Wait()
		e2Done := make(chan error, 1)
		go func() { e2Done <- e2.Campaign(ctx, "e2") }()
		synctest.Wait() // e0 queued, then e2

		ps[0].Faults.DelaySubscribers(100 * time.Millisecond)
		require.NoError(t, e1.Resign(ctx)) // grants to e0's Campaign; its message is in flight
		assert.ErrorIs(t, e0.Resign(ctx), redcoord.ErrLeaseLost, "the lost term")
		synctest.Wait()
		time.Sleep(200 * time.Millisecond) // the grant message arrives
		synctest.Wait()
		ps[0].Faults.DelaySubscribers(0)

		select {
		case err := <-e0Done:
			require.NoError(t, err, "e0's Campaign leads")
		default:
			t.Fatal("e0's Campaign still waits: its Resign ended the lead granted to it")
		}
		select {
		case err := <-e2Done:
			t.Fatalf("e2's Campaign returned %v while e0 leads: two leaders", err)
		default:
		}
		l, ok, err := e1.Leader(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, e0.Token(), l.Term)
		assert.Equal(t, "e0 again", l.Value)

		require.NoError(t, e0.Resign(ctx))
		require.NoError(t, <-e2Done)
		require.NoError(t, e2.Resign(ctx))
	})
}
