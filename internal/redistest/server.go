package redistest

import (
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Server is one started Redis server for a test.
type Server struct {
	Addr string               // host:port on 127.0.0.1
	Real bool                 // true: a server process ([Real]); false: miniredis
	Mini *miniredis.Miniredis // non-nil for miniredis
}

// Mini starts a miniredis listening on a free 127.0.0.1 port. ClockTTL is on,
// so keys expire as the real clock (or a synctest bubble's clock) advances,
// as they would on a real server. The server is closed by t.Cleanup; if it
// cannot start, Mini calls t.Fatal and nothing is left running. Mini listens
// on TCP, which a testing/synctest bubble cannot use: use [Bubble] there.
func Mini(t testing.TB) *Server {
	t.Helper()
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true)
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		t.Fatalf("redistest: start miniredis: %v", err)
	}
	t.Cleanup(m.Close)
	return &Server{Addr: m.Addr(), Mini: m}
}

// Both runs f as two subtests, "miniredis" and [ServerName] ("redis-server"
// or "valkey-server"). The second skips, as [Real] does, when the server is
// not installed.
func Both(t *testing.T, f func(t *testing.T, s *Server)) {
	t.Helper()
	t.Run("miniredis", func(t *testing.T) { f(t, Mini(t)) })
	t.Run(ServerName(t), func(t *testing.T) { f(t, Real(t)) })
}

// Options returns fresh client options pointing at s: Addr is s.Addr and
// DisableIdentity is true (miniredis does not know CLIENT SETINFO). Every
// other field keeps go-redis's default, including RESP3. The mutators run
// last, in order, and may change anything.
func (s *Server) Options(mut ...func(*redis.Options)) *redis.Options {
	opt := &redis.Options{
		Addr:            s.Addr,
		DisableIdentity: true,
	}
	for _, m := range mut {
		m(opt)
	}
	return opt
}

// Client returns a client made from s.Options(mut...). It is closed by
// t.Cleanup; closing it earlier is harmless.
func (s *Server) Client(t testing.TB, mut ...func(*redis.Options)) *redis.Client {
	t.Helper()
	c := redis.NewClient(s.Options(mut...))
	t.Cleanup(func() { _ = c.Close() })
	return c
}
