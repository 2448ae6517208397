package redistest

import (
	"testing"

	"github.com/redis/go-redis/v9/logging"
	"go.uber.org/goleak"
)

// Main runs a package's tests; the TestMain of every package here calls it.
// It silences go-redis's own logger first: the tests kill servers, cut
// connections and stall replies on purpose, and go-redis writes each failed
// dial or pool error ("connection refused") to stderr, where it reads like
// a failure. Then it runs the tests as goleak.VerifyTestMain does, which
// fails the run if they leave a goroutine behind, save one of go-redis's:
// after as many failed dials in a row as its pool has connections (a
// server down while a wait keeps trying), a pool probes the server once a
// second, and a probe asleep when its client is closed ends only when it
// wakes.
func Main(m *testing.M) {
	logging.Disable()
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}
