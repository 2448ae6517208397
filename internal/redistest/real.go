package redistest

import "testing"

// Real starts a redis-server (or valkey-server, as [ServerEnv] chooses)
// child process on a free 127.0.0.1 port and returns once it answers PING. The server runs in the foreground with no
// persistence (--save "" --appendonly no) and its own t.TempDir as --dir;
// args are appended to its command line, for example "--maxmemory-policy",
// "allkeys-lru".
//
// t.Cleanup kills the process and waits for it to exit. If the server is not
// on PATH, Real calls t.Skip, or t.Fatal when the environment sets CI. If the
// server does not answer PING within about five seconds, Real tries again on
// a new port, three times in all, then calls t.Fatal with the server's
// output, after killing and reaping every process: no server is left behind
// on any path.
func Real(t testing.TB, args ...string) *Server {
	t.Helper()
	bin, f := serverBin(t)
	p := startProc(t, bin, f.server, func(dir string, port int) ([]string, error) {
		return append(serverArgs(dir, port), args...), nil
	})
	return &Server{Addr: p.addr, Real: true}
}

// skipShort skips the test under go test -short: what needs, a Cluster, a
// Sentinel deployment or servers to kill, takes seconds to set up and its
// tests take longer still. CI runs without -short, and skips nothing.
func skipShort(t testing.TB, what string) {
	if testing.Short() {
		t.Skipf("%s: not with -short", what)
	}
}
