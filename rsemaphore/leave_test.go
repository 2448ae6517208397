package rsemaphore_test

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rsemaphore"
)

// An Acquire whose request took the last permit but whose reply came too
// late gives the permit back, even when its process is cut off from Redis
// as it gives up and every try of the leave fails at once: the leave is
// sent again until its bound, and gets through once the process is back.
func TestLeaveOutlastsCutOff(t *testing.T) {
	locktest.InBubble(t, 1, func(t *testing.T, _ *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		p := ps[0]
		p.Faults.TimeoutSwallowed() // a read cut off fails at once, not at its deadline
		s := rsemaphore.New(p.C, "n")
		require.NoError(t, s.SetPermits(ctx, 1))
		require.NoError(t, s.Acquire(ctx, 1)) // loads the script: only the reply is late
		require.NoError(t, s.Release(ctx, 1))

		scripts := func(args []string) bool { return args[0] == "EVALSHA" || args[0] == "EVAL" }
		p.Faults.DelayReply(scripts, time.Second) // the acquire runs; its reply is late
		time.AfterFunc(100*time.Millisecond, p.Faults.Stall)
		time.AfterFunc(1500*time.Millisecond, func() { p.Faults.Unstall(); p.Faults.CloseAll() })
		actx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		err := s.Acquire(actx, 1)
		require.ErrorIs(t, err, redcoord.ErrNotAcquired)

		time.Sleep(time.Second) // the process is back; the leave's bound has not run out
		n, err := s.Available(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(1), n, "the permit the request took is back")
	})
}
