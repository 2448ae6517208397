package scripts

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/redistest"
)

// A key of another type names the key, whether Redis refused a command on
// it (its error names no key) or a script's kind check did; on both
// paths, a Script run and a prepared Call.
func TestWrongTypeNamesTheKey(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		l := testLock("a").Prepared(time.Minute)
		acquire := func() error {
			_, err := l.Acquire(ctx, rdb, "a:1", NoToken, NewLeaseArg(time.Minute, nil), NoRegistry)
			return err
		}

		require.NoError(t, rdb.Set(ctx, "t:{n}:lock", "x", 0).Err())
		_, err := Touch(ctx, rdb, "t:{n}:lock", "k", "rlock")
		assert.ErrorIs(t, err, errs.ErrWrongType)
		assert.EqualError(t, err, "redcoord: key holds another type: key t:{n}:lock holds a string")

		require.NoError(t, rdb.Del(ctx, "t:{n}:lock").Err())
		require.NoError(t, rdb.RPush(ctx, "t:{n}:lock", "x").Err())
		err = acquire()
		assert.ErrorIs(t, err, errs.ErrWrongType)
		assert.EqualError(t, err, "redcoord: key holds another type: key t:{n}:lock holds a list")

		require.NoError(t, rdb.Del(ctx, "t:{n}:lock").Err())
		require.NoError(t, rdb.HSet(ctx, "t:{n}:lock", "k", "rfairlock").Err())
		err = acquire()
		assert.ErrorIs(t, err, errs.ErrWrongType)
		assert.EqualError(t, err, "redcoord: key holds another type: key t:{n}:lock holds rfairlock data, not rlock")
	})
}
