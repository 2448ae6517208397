package hub

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/obs"
)

// heard collects what a Hub's observer hears.
type heard struct {
	mu     sync.Mutex
	events []obs.Event
}

func (h *heard) add(e obs.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, e)
}

// of returns the events of kind k.
func (h *heard) of(k obs.Kind) []obs.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []obs.Event
	for _, e := range h.events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// patience bounds every wait in these tests. It is generous: the tests assert
// what happens, not how fast.
const patience = 5 * time.Second

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 4*patience)
	t.Cleanup(cancel)
	return ctx
}

func newClient(t *testing.T, srv *server, opts ...func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: srv.addr}
	for _, f := range opts {
		f(o)
	}
	rdb := redis.NewClient(o)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// newHub returns a Hub that is closed (and whose reader has exited) when the
// test ends.
func newHub(t *testing.T, rdb Subscriber, opts ...Option) *Hub {
	t.Helper()
	h, err := New(rdb, opts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		require.NoError(t, h.Close(ctx))
	})
	return h
}

func subscribe(t *testing.T, h *Hub, channel, id string) *Subscription {
	t.Helper()
	s, err := h.Subscribe(testCtx(t), channel, id)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// take reports whether s has a wake pending, and consumes it.
func take(s *Subscription) bool {
	select {
	case <-s.C():
		return true
	default:
		return false
	}
}

// takeAll consumes the pending wakes of subs and reports which had one.
func takeAll(subs []*Subscription) []bool {
	got := make([]bool, len(subs))
	for i, s := range subs {
		got[i] = take(s)
	}
	return got
}

// awaitWake waits (at most patience) for a wake on s.
func awaitWake(t *testing.T, s *Subscription, what string) {
	t.Helper()
	select {
	case <-s.C():
	case <-time.After(patience):
		t.Fatalf("no wake within %v: %s", patience, what)
	}
}

// fence orders the test after the Hub's reader: the server delivers the
// messages of one connection in order and the reader handles them in order,
// so once the fence's own message has woken it, everything published before
// has been dispatched.
type fence struct {
	rdb *redis.Client
	sub *Subscription
}

func newFence(t *testing.T, h *Hub, rdb *redis.Client) *fence {
	return &fence{rdb: rdb, sub: subscribe(t, h, "test:fence", "")}
}

func (f *fence) sync(t *testing.T) {
	t.Helper()
	require.NoError(t, f.rdb.Publish(testCtx(t), "test:fence", All()).Err())
	awaitWake(t, f.sub, "fence")
}

// publish sends msg to channel and waits until the Hub has dispatched it.
func publish(t *testing.T, f *fence, channel, msg string) {
	t.Helper()
	require.NoError(t, f.rdb.Publish(testCtx(t), channel, msg).Err())
	f.sync(t)
}

// ignoreNil turns redis.Nil (no such key) into no error.
func ignoreNil(err error) error {
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}

// eventually polls cond every 10ms for at most patience.
func eventually(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(patience); time.Now().Before(deadline); {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("not within %v: %s", patience, what)
}

// withoutCommands is st with its command count zeroed, for tests that ask
// whether anything is left registered, not what it cost.
func withoutCommands(st Stats) Stats {
	st.Commands = 0
	return st
}
