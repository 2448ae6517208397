package scripts

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/redistest"
)

// A set or a drain that go-redis sends again, after losing its reply, is
// applied once and replies as the first copy did: AddPermits does not add
// twice, TrySetPermits reports the set it made, and Drain returns the
// permits it took rather than 0 with them gone.
func TestSemRetriedSetAndDrain(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx := context.Background()
		rdb := srv.Client(t)
		s := testSem()
		twice := func(req, mode string, n int64) SetResult {
			first, err := s.Set(ctx, rdb, req, mode, n)
			require.NoError(t, err)
			again, err := s.Set(ctx, rdb, req, mode, n)
			require.NoError(t, err)
			assert.Equal(t, first, again, "%s %s %d: the retry replies as the first copy", req, mode, n)
			return first
		}
		assert.Equal(t, SetResult{Changed: true, Total: 5, Available: 5}, twice("try:1", SetIfUnset, 5))
		assert.Equal(t, SetResult{Changed: true, Total: 7, Available: 7}, twice("add:1", AddTotal, 2))
		assert.Equal(t, SetResult{Changed: true, Total: 6, Available: 6}, twice("add:2", AddTotal, -1))
		assert.Equal(t, SetResult{Changed: false, Total: 6, Available: 6}, twice("try:2", SetIfUnset, 9))

		first, err := s.Drain(ctx, rdb, "drain:1")
		require.NoError(t, err)
		again, err := s.Drain(ctx, rdb, "drain:1")
		require.NoError(t, err)
		assert.Equal(t, []int64{6, 6}, []int64{first, again})
		st, err := s.State(ctx, rdb)
		require.NoError(t, err)
		assert.Equal(t, SemState{Set: true, Total: 6}, st)
		ttl := rdb.PTTL(ctx, s.Drained+"drain:1").Val()
		assert.Greater(t, ttl, RequestTTL/2, "the drain's reply lives as long as a marker")
		assert.LessOrEqual(t, ttl, RequestTTL)
		n, err := s.Drain(ctx, rdb, "drain:2")
		require.NoError(t, err)
		assert.Zero(t, n, "a new drain finds nothing")
	})
}

// The expirable semaphore's set is applied once too.
func TestXSemRetriedSet(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx := context.Background()
		rdb := srv.Client(t)
		x := testXSem()
		for i, mode := range []string{SetIfUnset, AddTotal, AddTotal} {
			req := "req:" + strconv.Itoa(i)
			first, err := x.Set(ctx, rdb, req, mode, 3)
			require.NoError(t, err)
			again, err := x.Set(ctx, rdb, req, mode, 3)
			require.NoError(t, err)
			assert.Equal(t, first, again, "%s %s", req, mode)
		}
		st, err := x.State(ctx, rdb)
		require.NoError(t, err)
		assert.Equal(t, int64(9), st.Total, "3 set, then 3 added twice")
	})
}

// Totals stay within what a Lua number holds exactly: an add beyond
// MaxCount is refused and changes nothing.
func TestSemCountLimit(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx := context.Background()
		rdb := srv.Client(t)
		s, x := testSem(), testXSem()
		for _, set := range []func(req, mode string, n int64) (SetResult, error){
			func(req, mode string, n int64) (SetResult, error) { return s.Set(ctx, rdb, req, mode, n) },
			func(req, mode string, n int64) (SetResult, error) { return x.Set(ctx, rdb, req, mode, n) },
		} {
			r, err := set("max", SetIfUnset, MaxCount)
			require.NoError(t, err)
			assert.Equal(t, int64(MaxCount), r.Total)
			before := snapshot(t, rdb)
			_, err = set("over", AddTotal, 1)
			assert.ErrorIs(t, err, errs.ErrInvalidArgument)
			assert.ErrorContains(t, err, "exceed 9007199254740991")
			assert.Equal(t, before, snapshot(t, rdb), "refused, yet keys changed")
			r, err = set("down", AddTotal, -(MaxCount - 1))
			require.NoError(t, err)
			assert.Equal(t, int64(1), r.Total)
		}
	})
}
