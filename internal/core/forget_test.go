package core_test

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rlock"
)

// Each in-use key of the schema alone keeps Forget from deleting the
// fence, whatever kind's key it is; with none of them, Forget deletes it.
// (TestKeyspaceMatchesSchema checks that the in-use keys are the ones the
// primitives hold and wait with.)
func TestForgetRefusesWhileInUseKeyExists(t *testing.T) {
	locktest.InBubble(t, 1, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		const name, fence = "f", "rc:{f}:fence"
		m := rlock.New(ps[0].C, name)
		require.NoError(t, m.Lock(ctx))
		require.NoError(t, m.Unlock(ctx))
		time.Sleep(time.Second) // the clock passes the token
		for _, k := range core.Schema() {
			if !k.InUse {
				continue
			}
			key := "rc:{" + name + "}:" + k.Part
			switch k.Type {
			case "hash":
				mr.HSet(key, "x", "1")
			case "zset":
				_, err := mr.ZAdd(key, 1, "x")
				require.NoError(t, err)
			case "list":
				_, err := mr.Push(key, "x")
				require.NoError(t, err)
			default:
				t.Fatalf("%s: no way to make a %s", k.Pattern(), k.Type)
			}
			ok, err := m.Forget(ctx)
			require.NoError(t, err)
			assert.False(t, ok, "Forget while %s exists", key)
			assert.True(t, mr.Exists(fence), "the fence stays while %s exists", key)
			mr.Del(key)
		}
		ok, err := m.Forget(ctx)
		require.NoError(t, err)
		assert.True(t, ok, "Forget with no key in use")
		assert.False(t, mr.Exists(fence))
	})
}
