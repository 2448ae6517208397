package redistest

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
)

// faultyClient returns a client of s whose connections go through a new
// Faults.
func faultyClient(t *testing.T, s *Server) (*redis.Client, *Faults) {
	f := NewFaults()
	return s.Client(t, func(o *redis.Options) { o.Dialer = f.Dialer(nil) }), f
}

// The server executes INCR, the reply is lost, go-redis retries on a new
// connection: one Incr call increments twice.
func TestDropReplyDoubleExecutes(t *testing.T) {
	Both(t, func(t *testing.T, s *Server) {
		ctx := context.Background()
		rdb, f := faultyClient(t, s)
		if err := rdb.Ping(ctx).Err(); err != nil { // dial before arming
			t.Fatal(err)
		}
		var seen [][]string
		f.DropReply(func(args []string) bool {
			seen = append(seen, args)
			return len(args) == 2 && args[0] == "INCR" && args[1] == "k"
		})

		got, err := rdb.Incr(ctx, "k").Result()
		if err != nil {
			t.Fatalf("INCR: %v", err)
		}
		if got != 2 {
			t.Errorf("INCR replied %d, want 2: the lost first execution must count", got)
		}
		if n := f.Fired(); n != 1 {
			t.Errorf("Fired() = %d, want 1", n)
		}
		if len(seen) != 1 {
			t.Errorf("matcher saw %q; want only the first INCR (a fired fault is consumed)", seen)
		}

		// The fault is spent: the next INCR is executed once.
		if got, err := rdb.Incr(ctx, "k").Result(); err != nil || got != 3 {
			t.Errorf("second INCR = %d, %v; want 3", got, err)
		}
		if n := f.Fired(); n != 1 {
			t.Errorf("Fired() after a clean INCR = %d, want 1", n)
		}
	})
}

// Two armed faults fire on two commands; with retries off the caller sees
// the lost reply as io.EOF.
func TestDropReplyCountsArmedFaults(t *testing.T) {
	s := Mini(t)
	f := NewFaults()
	rdb := s.Client(t, func(o *redis.Options) {
		o.Dialer = f.Dialer(nil)
		o.MaxRetries = -1
	})
	ctx := context.Background()
	isSet := func(args []string) bool { return args[0] == "SET" }
	f.DropReply(isSet)
	f.DropReply(isSet)
	for i := range 2 {
		if err := rdb.Set(ctx, "k", i, 0).Err(); !errors.Is(err, io.EOF) {
			t.Fatalf("SET %d: %v, want the reply dropped (io.EOF)", i, err)
		}
	}
	if err := rdb.Set(ctx, "k", "last", 0).Err(); err != nil {
		t.Fatalf("third SET: %v, want success once both faults fired", err)
	}
	if n := f.Fired(); n != 2 {
		t.Fatalf("Fired() = %d, want 2", n)
	}
	if got := s.Mini.Keys(); len(got) != 1 {
		t.Fatalf("keys = %q", got)
	}
}

// CloseAll looks like a peer going away: the next command is retried on a new
// connection and succeeds.
func TestCloseAllReconnects(t *testing.T) {
	Both(t, func(t *testing.T, s *Server) {
		ctx := context.Background()
		rdb, f := faultyClient(t, s)
		if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		f.CloseAll()
		if got, err := rdb.Get(ctx, "k").Result(); err != nil || got != "v" {
			t.Fatalf("GET after CloseAll = %q, %v; want v", got, err)
		}
	})
}

func TestBlackhole(t *testing.T) {
	Both(t, func(t *testing.T, s *Server) {
		ctx := context.Background()
		rdb, f := faultyClient(t, s)
		sub := rdb.Subscribe(ctx, "ch")
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatalf("SUBSCRIBE: %v", err)
		}
		publish := func(payload string) {
			t.Helper()
			if n, err := rdb.Publish(ctx, "ch", payload).Result(); err != nil || n != 1 {
				t.Fatalf("PUBLISH %s = %d, %v; want 1 subscriber", payload, n, err)
			}
		}
		publish("before")
		if msg, err := sub.ReceiveTimeout(ctx, 2*time.Second); err != nil {
			t.Fatalf("before the blackhole: %v", err)
		} else if m, ok := msg.(*redis.Message); !ok || m.Payload != "before" {
			t.Fatalf("before the blackhole got %#v", msg)
		}

		f.Blackhole()
		publish("lost") // the server still counts the subscriber
		msg, err := sub.ReceiveTimeout(ctx, 300*time.Millisecond)
		var netErr net.Error
		if !errors.As(err, &netErr) || !netErr.Timeout() {
			t.Fatalf("blackholed receive = %#v, %v; want a timeout", msg, err)
		}

		f.Unblackhole()
		f.CloseAll()
		deadline := time.Now().Add(5 * time.Second)
		for i := 0; i < 50 && time.Now().Before(deadline); i++ {
			if _, err := rdb.Publish(ctx, "ch", "after").Result(); err != nil {
				t.Fatalf("PUBLISH after: %v", err)
			}
			msg, err := sub.ReceiveTimeout(ctx, 100*time.Millisecond)
			if err != nil {
				continue // reconnecting, or published before the resubscription
			}
			if m, ok := msg.(*redis.Message); ok {
				if m.Payload != "after" {
					t.Fatalf("got %q after recovery; want after (blackholed bytes are gone)", m.Payload)
				}
				return
			}
		}
		t.Fatal("no message within 5s after Unblackhole + CloseAll")
	})
}

// DelaySubscribers delivers a subscriber's messages late, in order, and
// leaves other connections alone.
func TestDelaySubscribers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, opts := Bubble()
		defer m.Close()
		f := NewFaults()
		opts.Dialer = f.Dialer(opts.Dialer)
		rdb := redis.NewClient(opts)
		defer rdb.Close()
		ctx := context.Background()
		sub := rdb.Subscribe(ctx, "ch")
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatalf("SUBSCRIBE: %v", err)
		}
		f.DelaySubscribers(100 * time.Millisecond)
		start := time.Now()
		for _, payload := range []string{"a", "b"} {
			if err := rdb.Publish(ctx, "ch", payload).Err(); err != nil {
				t.Fatalf("PUBLISH: %v", err)
			}
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("PUBLISH took %v; other connections are not delayed", took)
		}
		for _, want := range []string{"a", "b"} {
			msg, err := sub.ReceiveMessage(ctx)
			if err != nil || msg.Payload != want {
				t.Fatalf("got %v, %v; want %s", msg, err, want)
			}
		}
		if took := time.Since(start); took < 100*time.Millisecond {
			t.Errorf("messages arrived after %v; want at least 100ms", took)
		}
		f.DelaySubscribers(0)
	})
}
