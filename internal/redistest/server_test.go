package redistest

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestBothAnswerPing(t *testing.T) {
	Both(t, func(t *testing.T, s *Server) {
		if !strings.HasPrefix(s.Addr, "127.0.0.1:") {
			t.Errorf("Addr = %q, want 127.0.0.1:port", s.Addr)
		}
		if s.Real == (s.Mini != nil) {
			t.Errorf("Real = %v with Mini = %v; want exactly one kind", s.Real, s.Mini)
		}
		if got, err := s.Client(t).Ping(context.Background()).Result(); err != nil || got != "PONG" {
			t.Fatalf("PING = %q, %v; want PONG", got, err)
		}
	})
}

func TestRealPassesArgs(t *testing.T) {
	s := Real(t, "--maxmemory-policy", "allkeys-lru")
	if !s.Real || s.Mini != nil {
		t.Fatalf("Real returned %+v", s)
	}
	got, err := s.Client(t).ConfigGet(context.Background(), "maxmemory-policy").Result()
	if err != nil || got["maxmemory-policy"] != "allkeys-lru" {
		t.Fatalf("CONFIG GET maxmemory-policy = %v, %v; want allkeys-lru", got, err)
	}
	cfg, err := s.Client(t).ConfigGet(context.Background(), "save").Result()
	if err != nil || cfg["save"] != "" {
		t.Fatalf("CONFIG GET save = %v, %v; want persistence off", cfg, err)
	}
}

func TestMiniExpiresOnClock(t *testing.T) {
	s := Mini(t)
	if s.Real || s.Mini == nil {
		t.Fatalf("Mini returned %+v", s)
	}
	ctx := context.Background()
	rdb := s.Client(t)
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.PExpire(ctx, "k", time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if n, err := rdb.Exists(ctx, "k").Result(); err != nil {
			t.Fatal(err)
		} else if n == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("key with a 1ms TTL still exists after ~1s: ClockTTL is off")
}

func TestOptionsMutatorsRunLast(t *testing.T) {
	s := &Server{Addr: "127.0.0.1:1"}
	opt := s.Options(func(o *redis.Options) { o.DB = 3 }, func(o *redis.Options) { o.DisableIdentity = false })
	if opt.Addr != s.Addr || opt.DB != 3 || opt.DisableIdentity {
		t.Fatalf("Options = %+v", opt)
	}
	if !s.Options().DisableIdentity {
		t.Fatal("DisableIdentity is not set by default")
	}
}

func TestRealSkipsWithoutBinary(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CI", "")
	var skipped bool
	t.Run("no server", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		Real(t)
	})
	if !skipped {
		t.Fatal("Real did not skip with its server missing from PATH")
	}
}

// In CI nothing may skip: a missing server fails the test.
func TestRealFailsWithoutBinaryInCI(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CI", "true")
	if msg := fatalOf(t, func(tb testing.TB) { Real(tb) }); !strings.Contains(msg, "CI is set") {
		t.Fatalf("Real did not fail with its server missing and CI set: %q", msg)
	}
}

// fatalRecorder is a testing.TB whose Fatalf records the message and ends
// the calling goroutine, as t.Fatalf does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fatalOf runs f with a fatalRecorder on a goroutine of its own and returns
// the message f failed with, or "" if f returned.
func fatalOf(t testing.TB, f func(testing.TB)) string {
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(rec)
	}()
	<-done
	return rec.msg
}

func TestRealFailsWithServerOutput(t *testing.T) {
	Real(t) // skip early if the server is missing
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Real(rec, "--no-such-directive", "x")
	}()
	select {
	case <-done:
	case <-time.After(Patience(3 * startAttempts * startTimeout)):
		t.Fatal("Real did not give up")
	}
	if !strings.Contains(rec.msg, "no-such-directive") {
		t.Fatalf("Fatalf message does not carry the server's output:\n%s", rec.msg)
	}
}

// REDCOORD_SERVER picks the binaries; a value it does not know is an error
// naming the variable, not a silent fallback to redis-server.
func TestServerEnvChoosesTheFamily(t *testing.T) {
	for _, c := range []struct{ env, server, cli string }{
		{"", "redis-server", "redis-cli"},
		{"redis", "redis-server", "redis-cli"},
		{"valkey", "valkey-server", "valkey-cli"},
	} {
		t.Setenv(ServerEnv, c.env)
		f, err := chosenFamily()
		if err != nil || f.server != c.server || f.cli != c.cli {
			t.Errorf("%s=%q: %+v, %v; want %s and %s", ServerEnv, c.env, f, err, c.server, c.cli)
		}
	}
	t.Setenv(ServerEnv, "keydb")
	if _, err := chosenFamily(); err == nil || !strings.Contains(err.Error(), ServerEnv) ||
		!strings.Contains(err.Error(), "keydb") {
		t.Errorf("%s=keydb: %v; want an error naming the variable and its value", ServerEnv, err)
	}
	if msg := fatalOf(t, func(tb testing.TB) { Real(tb) }); !strings.Contains(msg, ServerEnv) {
		t.Errorf("Real with %s=keydb: %q; want a failure naming the variable", ServerEnv, msg)
	}
}

// The server Real starts is the one REDCOORD_SERVER names: Valkey says so
// in INFO (server_name:valkey), redis-server has no such field.
func TestRealStartsTheChosenServer(t *testing.T) {
	f := chosen(t)
	info, err := Real(t).Client(t).Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := infoField(info, "server_name") == "valkey", f.name == "valkey"; got != want {
		t.Fatalf("%s=%q started a server whose INFO says server_name:%q", ServerEnv, os.Getenv(ServerEnv),
			infoField(info, "server_name"))
	}
}
