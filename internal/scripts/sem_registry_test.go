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

// A release by a registered Client that hands its permits to its own
// waiters (self) sends it nothing, leaves it registered and counts its
// fewest: other Clients are woken only with what that leaves.
func TestSemReleaseBySelf(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		s := testSem()
		sub := rdb.PSubscribe(ctx, s.Channel+"*")
		defer sub.Close()
		_, err := sub.Receive(ctx)
		require.NoError(t, err)
		_, err = s.Set(ctx, rdb, "h:0", SetTotal, 3)
		require.NoError(t, err)
		_, err = s.Acquire(ctx, rdb, "h:1", 3, SemTry, time.Minute)
		require.NoError(t, err)
		for _, req := range []string{"u:1", "v:1"} {
			_, err := s.Acquire(ctx, rdb, req, 1, SemRegister, time.Minute)
			require.NoError(t, err)
		}
		require.Equal(t, []string{"u", "v"}, rdb.ZRange(ctx, s.Waiters, 0, -1).Val())

		r, err := s.Release(ctx, rdb, "u:2", 1, "u")
		require.NoError(t, err)
		assert.Equal(t, SemReleased{Available: 1, Own: 1}, r, "u hands 1 on to its own")
		assert.Empty(t, receiveAll(t, rdb, sub, s.Channel), "the permit is u's own waiters'")
		assert.Equal(t, []string{"u", "v"}, rdb.ZRange(ctx, s.Waiters, 0, -1).Val())

		r, err = s.Release(ctx, rdb, "u:3", 2, "u")
		require.NoError(t, err)
		assert.Equal(t, SemReleased{Available: 3, Own: 2}, r)
		msgs := receiveAll(t, rdb, sub, s.Channel)
		require.Len(t, msgs, 1)
		assert.Equal(t, s.Channel+":v", msgs[0].Channel)
		assert.Equal(t, "n:1", msgs[0].Payload, "v gets what u's fewest leaves of the 2 freed")
		assert.Equal(t, []string{"u"}, rdb.ZRange(ctx, s.Waiters, 0, -1).Val())
	})
}
