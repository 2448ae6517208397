package rrwlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rrwlock"
)

// A watchdog renewal of a read hold, sent before RUnlock and reaching Redis
// after the handle's RLockWithLease, leaves the fresh hold as it was: its
// fixed lease is not cut to the watchdog's TTL (which would let a writer
// in beside the reader while RLost is still open), its count and token
// stay.
func TestLateReadRenewal(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		c := locktest.NewClient(t, rdb, redcoord.WithLeaseTTL(time.Second))
		ctx := context.Background()
		r, w := rrwlock.New(c, "n"), rrwlock.New(c, "n")
		require.NoError(t, r.RLock(ctx))
		script, keys, args := rrwlock.ReadRenewal(r) // sent now, delivered below
		require.NoError(t, r.RUnlock(ctx))
		require.NoError(t, r.RLockWithLease(ctx, 10*time.Second))
		token := r.RToken()

		n, err := script.Run(ctx, rdb, keys, args...).Int()
		require.NoError(t, err)
		assert.Zero(t, n, "the renewal's hold has ended")
		st := stateOf(t, w)
		require.Len(t, st.Readers, 1)
		assert.Equal(t, int64(1), st.Readers[0].Count)
		assert.Greater(t, st.Readers[0].Remaining, 9*time.Second, "the fixed lease stands")
		assert.Equal(t, token, r.RToken())
		select {
		case <-r.RLost():
			t.Fatal("the fresh hold is lost")
		default:
		}
		assert.False(t, tryW(t, w), "no writer beside the reader")
		require.NoError(t, r.RUnlock(ctx))
	})
}
