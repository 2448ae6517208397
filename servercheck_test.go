package redcoord_test

import (
	"bytes"
	"context"
	"log"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
)

// logBuffer is an io.Writer safe for the Client's goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines returns the log's lines at level.
func (b *logBuffer) lines(level string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, l := range strings.Split(b.buf.String(), "\n") {
		if strings.Contains(l, "level="+level) {
			out = append(out, l)
		}
	}
	return out
}

// checkedLog runs a few operations on a fresh Client of srv, closes it (which
// waits for the server check) and returns what it logged.
func checkedLog(t *testing.T, srv *redistest.Server) *logBuffer {
	t.Helper()
	return checkedLogOf(t, srv.Client(t))
}

// checkedLogOf is checkedLog for a Client of rdb.
func checkedLogOf(t *testing.T, rdb redcoord.Redis) *logBuffer {
	t.Helper()
	ctx := context.Background()
	log := &logBuffer{}
	c, err := redcoord.New(rdb,
		redcoord.WithLogger(slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		mu := rlock.New(c, "orders")
		require.NoError(t, mu.Lock(ctx))
		require.NoError(t, mu.Unlock(ctx))
	}
	require.NoError(t, c.Close(ctx))
	return log
}

// A server that may evict keys with a TTL gets one warning per Client that
// names the policy; the others get none.
func TestEvictionPolicyWarning(t *testing.T) {
	for _, policy := range []string{"allkeys-lru", "volatile-ttl", "allkeys-random", "volatile-lfu"} {
		t.Run(policy, func(t *testing.T) {
			log := checkedLog(t, redistest.Real(t, "--maxmemory-policy", policy))
			warns := log.lines("WARN")
			require.Len(t, warns, 1, "one warning, however many operations")
			assert.Contains(t, warns[0], "maxmemory-policy="+policy)
			assert.Contains(t, warns[0], "noeviction")
		})
	}
	t.Run("noeviction", func(t *testing.T) {
		assert.Empty(t, checkedLog(t, redistest.Real(t)).lines("WARN"))
	})
	t.Run("CONFIG not permitted", func(t *testing.T) {
		log := checkedLog(t, redistest.Real(t, "--maxmemory-policy", "allkeys-lru", "--rename-command", "CONFIG", ""))
		assert.Empty(t, log.lines("WARN"), "nothing to warn about without CONFIG")
		assert.NotEmpty(t, log.lines("DEBUG"), "the refusal is logged at debug")
	})
	t.Run("miniredis", func(t *testing.T) {
		assert.Empty(t, checkedLog(t, redistest.Mini(t)).lines("WARN"))
	})
}

// Without WithLogger the warning goes to slog.Default, and names the address
// the plain client is configured with.
func TestEvictionPolicyWarningDefaultLogger(t *testing.T) {
	srv := redistest.Real(t, "--maxmemory-policy", "allkeys-lru")
	buf := &logBuffer{}
	// SetDefault also sends the log package's output to the handler: put
	// both back.
	prev, out, flags := slog.Default(), log.Writer(), log.Flags()
	slog.SetDefault(slog.New(slog.NewTextHandler(buf, nil)))
	t.Cleanup(func() {
		slog.SetDefault(prev)
		log.SetOutput(out)
		log.SetFlags(flags)
	})

	ctx := context.Background()
	c, err := redcoord.New(srv.Client(t))
	require.NoError(t, err)
	mu := rlock.New(c, "orders")
	require.NoError(t, mu.Lock(ctx))
	require.NoError(t, mu.Unlock(ctx))
	require.NoError(t, c.Close(ctx)) // waits for the server check
	warns := buf.lines("WARN")
	require.Len(t, warns, 1)
	assert.Contains(t, warns[0], "maxmemory-policy=allkeys-lru")
	assert.Contains(t, warns[0], "addr="+srv.Addr)
}

// On Cluster every primary is checked: one warning per primary that evicts.
func TestEvictionPolicyWarningCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 0)
	ctx := context.Background()
	masters := cl.Masters()
	for _, addr := range masters[:2] {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		require.NoError(t, rdb.ConfigSet(ctx, "maxmemory-policy", "volatile-lru").Err())
		require.NoError(t, rdb.Close())
	}
	log := checkedLogOf(t, cl.Client(t))
	warns := log.lines("WARN")
	require.Len(t, warns, 2, "one per evicting primary")
	for i, addr := range masters[:2] {
		assert.Contains(t, strings.Join(warns, "\n"), "addr="+addr, "primary %d", i)
	}
	assert.NotContains(t, strings.Join(warns, "\n"), "addr="+masters[2])
}
