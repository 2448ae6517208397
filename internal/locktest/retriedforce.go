package locktest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/redistest"
)

// RetriedForce checks that a ForceUnlock whose reply is lost after Redis
// applied it, and which go-redis therefore sends again, ends the hold it
// was called for and not the next holder's: by the time the retry lands
// the name has passed to a waiter and the fence has moved on, and the
// retry replies as the first run did (ForceUnlock reports true). script is
// the kind's force script.
func RetriedForce(t *testing.T, k Kind, script string) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx := context.Background()
		faults := redistest.NewFaults()
		// The retry waits long enough for the woken waiter to take the name.
		backoff := redistest.Patience(300 * time.Millisecond)
		rdb := srv.Client(t, func(o *redis.Options) {
			o.Dialer = faults.Dialer(nil)
			o.MinRetryBackoff, o.MaxRetryBackoff = backoff, backoff
		})
		c := NewClient(t, rdb)
		// Load the script first: a dropped NOSCRIPT reply would only be
		// followed by SCRIPT LOAD and the same EVALSHA, which runs the script once.
		_, err := k.Force(ctx, c, "warm")
		require.NoError(t, err)

		a, w := k.New(c, "n"), k.New(c, "n")
		require.NoError(t, a.Lock(ctx))
		wctx, cancel := context.WithTimeout(ctx, redistest.Patience(30*time.Second))
		defer cancel()
		took := make(chan error, 1)
		go func() { took <- w.Lock(wctx) }()
		time.Sleep(backoff / 3) // w waits

		faults.DropReply(EvalSHA(script))
		forced, err := k.Force(ctx, c, "n")
		require.NoError(t, err)
		require.Equal(t, 1, faults.Fired(), "the force's reply was lost, and the force sent again")
		assert.True(t, forced, "the retry replies as the force did")
		require.NoError(t, <-took)
		assert.False(t, IsClosed(w.Lost()), "the waiter that took the name after the force still holds it")
		assert.NoError(t, w.Unlock(ctx))
		assert.ErrorIs(t, a.Unlock(ctx), redcoord.ErrLeaseLost)
	})
}
