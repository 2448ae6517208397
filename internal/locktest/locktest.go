// Package locktest holds the test helpers that rlock's and rfairlock's tests
// share: a Client closed by t.Cleanup, the keys a test may expect, a bounded
// wait for asynchronous effects, and the bad-input test both packages run.
// Only _test.go files import it.
package locktest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/internal/scripts"
)

// NewClient returns a redcoord Client on rdb, closed by t.Cleanup.
func NewClient(t testing.TB, rdb redcoord.Redis, opts ...redcoord.Option) *redcoord.Client {
	t.Helper()
	c, err := redcoord.New(rdb, opts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), redistest.Patience(10*time.Second))
		defer cancel()
		require.NoError(t, c.Close(ctx))
	})
	return c
}

// Keys returns every key in the server but the Clients' request markers
// (rc:{N}:rel:<client id>), which outlive a release by scripts.MarkerTTL so
// a retried release is recognised.
func Keys(t testing.TB, rdb *redis.Client) []string {
	t.Helper()
	all, err := rdb.Keys(context.Background(), "*").Result()
	require.NoError(t, err)
	return WithoutMarkers(all)
}

// WithoutMarkers returns all but the release and leave markers, as Keys.
func WithoutMarkers(all []string) []string {
	var k []string
	for _, key := range all {
		if !strings.Contains(key, "}:rel:") {
			k = append(k, key)
		}
	}
	return k
}

// Eventually polls cond every 10ms until it holds, for at most
// redistest.Patience(10s): for effects that happen asynchronously (a
// waiter reaching the queue, UNSUBSCRIBE). It bounds the test, it does not
// time it.
func Eventually(t testing.TB, cond func() bool, msg string) {
	t.Helper()
	bound := redistest.Patience(10 * time.Second)
	for start := time.Now(); time.Since(start) < bound; time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	if !cond() {
		t.Fatalf("not within %v: %s", bound, msg)
	}
}

// IsClosed reports whether ch is closed, without waiting.
func IsClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Second returns the error of a call that returns a value and an error.
func Second[T any](_ T, err error) error { return err }

// EvalSHA matches the EVALSHA of one script, for Faults.DropReply.
func EvalSHA(name string) func(args []string) bool {
	sha := scripts.SHA(name)
	return func(args []string) bool {
		return len(args) > 1 && strings.EqualFold(args[0], "evalsha") && args[1] == sha
	}
}

// Quantile returns the q-quantile of ds (1: the maximum), for benchmarks'
// figures.
func Quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}
