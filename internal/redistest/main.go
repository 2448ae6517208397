package redistest

import (
	"log/slog"
	"os"
	"testing"

	"github.com/redis/go-redis/v9/logging"
	"go.uber.org/goleak"
)

// Main runs a package's tests; the TestMain of every package here calls it.
// It quiets two loggers first, as the tests kill servers, cut connections
// and stall replies on purpose. go-redis writes each failed dial or pool
// error ("connection refused") to stderr, where it reads like a failure:
// it is silenced. A Client logs to slog.Default() unless given WithLogger,
// and its warnings ("Redis unreachable; the wait keeps trying") run to
// thousands of lines a run: records below Error are dropped, unless
// REDCOORD_TEST_LOG is set (to anything but ""). The log package's own
// output is kept (slog.SetLogLoggerLevel sets the level of slog's default
// handler only), and a test that checks what is logged installs a handler
// of its own, with slog.SetDefault or WithLogger.
//
// Then it runs the tests as goleak.VerifyTestMain does, which fails the
// run if they leave a goroutine behind, save one of go-redis's: after as
// many failed dials in a row as its pool has connections (a server down
// while a wait keeps trying), a pool probes the server once a second, and
// a probe asleep when its client is closed ends only when it wakes.
func Main(m *testing.M) {
	logging.Disable()
	if os.Getenv("REDCOORD_TEST_LOG") == "" {
		slog.SetLogLoggerLevel(slog.LevelError)
	}
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}
