package redistest

import (
	"context"
	"fmt"
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
	t.Run("no redis-server", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		Real(t)
	})
	if !skipped {
		t.Fatal("Real did not skip with redis-server missing from PATH")
	}
}

// In CI nothing may skip: a missing redis-server fails the test.
func TestRealFailsWithoutBinaryInCI(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CI", "true")
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Real(rec)
	}()
	<-done
	if !strings.Contains(rec.msg, "CI is set") {
		t.Fatalf("Real did not fail with redis-server missing and CI set: %q", rec.msg)
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

func TestRealFailsWithServerOutput(t *testing.T) {
	Real(t) // skip early if redis-server is missing
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
