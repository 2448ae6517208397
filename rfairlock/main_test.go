package rfairlock_test

import (
	"context"
	"strings"
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

// keys returns every key in the server but release markers (rc:{N}:rel:<owner>),
// which outlive a release by scripts.MarkerTTL so a retried release is recognised.
func keys(t testing.TB, rdb *redis.Client) []string {
	t.Helper()
	all, err := rdb.Keys(context.Background(), "*").Result()
	require.NoError(t, err)
	return withoutMarkers(all)
}

func withoutMarkers(all []string) []string {
	var k []string
	for _, key := range all {
		if !strings.Contains(key, "}:rel:") {
			k = append(k, key)
		}
	}
	return k
}

// eventually polls cond every 10ms for at most 10s: for effects that happen
// asynchronously (a waiter reaching the queue, UNSUBSCRIBE). It bounds the
// test, it does not time it.
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

func second[T any](_ T, err error) error { return err }
