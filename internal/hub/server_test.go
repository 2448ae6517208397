package hub

import (
	"testing"

	"github.com/alicebob/miniredis/v2"

	"github.com/redcoord/redcoord/internal/redistest"
)

func TestMain(m *testing.M) {
	redistest.Main(m)
}

// server is a Redis to test against: miniredis, or a real server started
// for the test by redistest.Real.
type server struct {
	addr string
	mr   *miniredis.Miniredis // nil for a real server
}

// forEachServer runs f against miniredis and against a real server (see
// redistest.Both).
func forEachServer(t *testing.T, f func(t *testing.T, srv *server)) {
	t.Helper()
	t.Run("miniredis", func(t *testing.T) {
		mr := miniredis.RunT(t)
		f(t, &server{addr: mr.Addr(), mr: mr})
	})
	t.Run(redistest.ServerName(t), func(t *testing.T) {
		f(t, startRedisServer(t))
	})
}

// startRedisServer starts a real server (redistest.Real) for the test.
func startRedisServer(t *testing.T) *server {
	t.Helper()
	return &server{addr: redistest.Real(t).Addr}
}
