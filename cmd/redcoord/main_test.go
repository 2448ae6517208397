package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// result is what one run of the command gave.
type result struct {
	code           int
	stdout, stderr string
}

// cli runs the command with args and stdin.
func cli(t testing.TB, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errb)
	return result{code, out.String(), errb.String()}
}

// wantCode fails the test unless r exited with code.
func (r result) wantCode(t testing.TB, code int) result {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
	return r
}

// listing decodes ls -json's document, by name.
func listing(t testing.TB, r result) map[string]*State {
	t.Helper()
	var doc struct{ Names []*State }
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("ls -json: %v\n%s", err, r.stdout)
	}
	m := map[string]*State{}
	for _, st := range doc.Names {
		m[st.Name] = st
	}
	return m
}

// state decodes inspect -json's document.
func state(t testing.TB, r result) *State {
	t.Helper()
	var st State
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("inspect -json: %v\n%s", err, r.stdout)
	}
	return &st
}

// newClient returns a redcoord Client on rdb, closed by t.Cleanup.
func newClient(t testing.TB, rdb redcoord.Redis) *redcoord.Client {
	t.Helper()
	c, err := redcoord.New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// waiters runs each of fs in its own goroutine, in order, each started
// once until(i) reports that the previous ones are in place (polled for at
// most 10 s, stretched by redistest.Patience). The goroutines get a
// context that t.Cleanup cancels, and t.Cleanup waits for them.
func waiters(t testing.TB, until func(i int) bool, fs ...func(ctx context.Context)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for i, f := range fs {
		wg.Go(func() { f(ctx) })
		eventually(t, func() bool { return until(i + 1) })
	}
}

// eventually polls cond every 20 ms until it holds, failing the test after
// 10 s (stretched by redistest.Patience).
func eventually(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(redistest.Patience(10 * time.Second))
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in time")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// recorder keeps what a running command writes, for the test to read
// meanwhile.
type recorder struct {
	mu  sync.Mutex
	out []byte
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.out = append(r.out, p...)
	r.mu.Unlock()
	return len(p), nil
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return string(r.out)
}
