package lease_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/redistest"
)

// ended records the leases a Holder was told of.
type ended struct {
	mu    sync.Mutex
	lost  []*lease.Lease
	close []*lease.Lease
}

func (e *ended) LeaseEnded(l *lease.Lease, closed bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if closed {
		e.close = append(e.close, l)
	} else {
		e.lost = append(e.lost, l)
	}
}

// A lease watched again after Remove is the same Lease: renewed from its
// last renewal, and its end reported by it, so that a holder that knows
// its hold's lease by it hears the end whenever the report comes.
func TestAgainWatchesTheSameLease(t *testing.T) {
	bubble(t, func(t *testing.T, m *miniredis.Miniredis, rdb *redis.Client, _ *redistest.RoundTrips, w *lease.Watchdog) {
		ctx := context.Background()
		require.NoError(t, rdb.Set(ctx, "k", "x", ttl).Err())
		var e ended
		l, err := w.Watch(lease.Renewal{Script: renew, Keys: []string{"k"}, Args: []any{ttl.Milliseconds()}}, time.Now(), &e)
		require.NoError(t, err)
		time.Sleep(w.Interval() + time.Millisecond) // one renewal
		synctest.Wait()
		renewed := l.Renewed()
		l.Remove()
		assert.Equal(t, 0, w.Len())
		require.NoError(t, l.Again())
		assert.Equal(t, 1, w.Len())
		assert.Equal(t, renewed, l.Renewed(), "watched again from its last renewal")
		m.Del("k")
		time.Sleep(w.Interval() + time.Millisecond)
		synctest.Wait()
		e.mu.Lock()
		assert.Equal(t, []*lease.Lease{l}, e.lost, "its end is reported by the same Lease")
		e.mu.Unlock()
		assert.Equal(t, 0, w.Len())

		w.Stop()
		assert.ErrorIs(t, l.Again(), errs.ErrClosed, "a stopped watchdog watches nothing again")
	})
}
