package scripts

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
)

// A request's Client leaves the semaphore's waiter registry when the
// request takes its permits for the Client's last blocked acquire, when a
// SemUnregister try finds them taken, and when its last blocked acquire
// leaves, whether or not its caller saw a try register it (a registering
// try whose reply was lost).
func TestSemRegistryLeft(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		s := testSem()
		waiters := func() []string { return rdb.ZRange(ctx, s.Waiters, 0, -1).Val() }
		try := func(req string, w SemWait) bool {
			t.Helper()
			a, err := s.Acquire(ctx, rdb, req, 1, w, time.Minute)
			require.NoError(t, err)
			return a.OK
		}
		_, err := s.Set(ctx, rdb, "h:0", SetTotal, 1)
		require.NoError(t, err)
		require.True(t, try("h:1", SemTry))

		require.False(t, try("b:1", SemRegister))
		assert.Equal(t, []string{"b"}, waiters())
		_, err = s.Leave(ctx, rdb, "b:1", 1, false, time.Minute, 0)
		require.NoError(t, err)
		assert.Empty(t, waiters(), "a leave unregisters")

		require.False(t, try("c:1", SemRegister))
		require.False(t, try("c:1", SemUnregister))
		assert.Empty(t, waiters(), "SemUnregister drops the registration of a busy try")

		_, err = s.Release(ctx, rdb, "h:2", 1, "")
		require.NoError(t, err)
		deadline := float64(time.Now().Add(time.Hour).UnixMilli())
		require.NoError(t, rdb.ZAdd(ctx, s.Waiters, redis.Z{Score: deadline, Member: "d"}).Err())
		require.True(t, try("d:1", SemRegister))
		assert.Empty(t, waiters(), "a request that takes its permits for its Client's last waiter unregisters it")
	})
}
