package hub

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
)

func TestMain(m *testing.M) {
	redistest.Main(m)
}

// server is a Redis to test against: miniredis, or a real redis-server
// started for the test.
type server struct {
	addr string
	mr   *miniredis.Miniredis // nil for a real server
}

// forEachServer runs f against miniredis and against a real redis-server
// (skipped when the binary is missing).
func forEachServer(t *testing.T, f func(t *testing.T, srv *server)) {
	t.Helper()
	t.Run("miniredis", func(t *testing.T) {
		mr := miniredis.RunT(t)
		f(t, &server{addr: mr.Addr(), mr: mr})
	})
	t.Run("redis-server", func(t *testing.T) {
		f(t, startRedisServer(t))
	})
}

// startRedisServer starts `redis-server` on a free local port, without
// persistence, and stops it when the test ends.
func startRedisServer(t *testing.T) *server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not found in PATH: skipping the real-server test (install redis-server to run it)")
	}
	for attempt := 0; attempt < 5; attempt++ {
		port := freePort(t)
		cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no")
		require.NoError(t, cmd.Start())
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if waitReady(addr) {
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			})
			return &server{addr: addr}
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait() // the port was probably taken in between: try another
	}
	t.Fatal("redis-server did not start")
	return nil
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitReady pings addr until it answers, for at most 5s.
func waitReady(addr string) bool {
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	for i := 0; i < 100; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}
