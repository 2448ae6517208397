package scripts

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
)

// The leave of a registered request that is not its Client's last: when a
// release had woken the Client (it is not registered) and the Client's
// other blocked acquires' fewest does not fit in what is free, the wake
// goes on to the next registered Client that fits; when it fits, the
// Client keeps the wake (Kept: the permits free), and nobody else is
// woken. A leave before any wake publishes nothing and keeps the Client
// registered with its other acquires' fewest.
func TestSemLeaveOfNonLastWaiter(t *testing.T) {
	cases := []struct {
		name   string
		woken  bool  // a release of 1 woke u before the leave
		others int64 // the fewest u's other blocked acquires ask for
		left   SemLeft
		msgs   []string // after the release's
		reg    []string // the registry after the leave
		least  float64  // u's size after the leave, when registered
	}{
		{"woken, the others too large: the wake goes on", true, 2, SemLeft{}, []string{"v n:1"}, nil, 0},
		{"woken, another fits: kept", true, 1, SemLeft{Kept: 1}, nil, []string{"v"}, 0},
		{"not woken", false, 2, SemLeft{}, nil, []string{"u", "v"}, 2},
	}
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		s := testSem()
		sub := rdb.PSubscribe(ctx, s.Channel+"*")
		defer sub.Close()
		_, err := sub.Receive(ctx)
		require.NoError(t, err)
		messages := func() []string {
			var got []string
			for _, m := range receiveAll(t, rdb, sub, s.Channel) {
				client, _ := strings.CutPrefix(m.Channel, s.Channel+":")
				got = append(got, client+" "+m.Payload)
			}
			return got
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				require.NoError(t, rdb.FlushAll(ctx).Err())
				_, err := s.Set(ctx, rdb, "h:0", SetTotal, 3)
				require.NoError(t, err)
				_, err = s.Acquire(ctx, rdb, "h:1", 3, SemTry, time.Minute)
				require.NoError(t, err)
				for _, req := range []string{"u:1", "v:1"} {
					a, err := s.Acquire(ctx, rdb, req, 1, SemRegister, time.Minute)
					require.NoError(t, err)
					require.False(t, a.OK)
				}
				if tc.woken {
					_, err = s.Release(ctx, rdb, "h:2", 1, "")
					require.NoError(t, err)
					assert.Equal(t, []string{"u n:1"}, messages(), "the release wakes u, the oldest")
				}
				left, err := s.Leave(ctx, rdb, "u:1", 1, true, time.Minute, tc.others)
				require.NoError(t, err)
				assert.Equal(t, tc.left, left)
				assert.Equal(t, tc.msgs, messages())
				assert.Equal(t, tc.reg, nilIfEmpty(rdb.ZRange(ctx, s.Waiters, 0, -1).Val()), "the registry")
				if tc.least > 0 {
					assert.Equal(t, tc.least, rdb.ZScore(ctx, s.Sizes, "u").Val(), "u's size")
				}
			})
		}
	})
}
