package rlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/redcoord/redcoord"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newClient returns a redcoord Client on rdb, closed by t.Cleanup.
func newClient(t testing.TB, rdb redcoord.Redis, opts ...redcoord.Option) *redcoord.Client {
	t.Helper()
	c, err := redcoord.New(rdb, opts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, c.Close(ctx))
	})
	return c
}

// keys returns every key in the server.
func keys(t testing.TB, rdb *redis.Client) []string {
	t.Helper()
	k, err := rdb.Keys(context.Background(), "*").Result()
	require.NoError(t, err)
	return k
}

// eventually polls cond every 10ms for at most 10s: for effects Redis applies
// asynchronously (UNSUBSCRIBE). It bounds the test, it does not time it.
func eventually(t testing.TB, cond func() bool, msg string) {
	t.Helper()
	for i := 0; i < 1000; i++ {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("not within 10s: %s", msg)
}
