package redistest

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
)

// A client on Bubble's options works inside a bubble: commands, Lua TIME on
// the fake clock, Pub/Sub, TTLs expiring on time.Sleep, and nothing left
// running once the client and the server are closed (synctest.Test fails if
// a goroutine of the bubble outlives it).
func TestBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m, opt := Bubble()
		defer m.Close()
		rdb := redis.NewClient(opt)
		defer rdb.Close()

		if err := rdb.Set(ctx, "k", "v", 10*time.Second).Err(); err != nil {
			t.Fatalf("SET: %v", err)
		}
		if got, err := rdb.Get(ctx, "k").Result(); err != nil || got != "v" {
			t.Fatalf("GET = %q, %v; want v", got, err)
		}

		start := time.Now()
		secs, err := rdb.Eval(ctx, "return redis.call('TIME')[1]", nil).Int64()
		if err != nil {
			t.Fatalf("EVAL TIME: %v", err)
		}
		if secs != start.Unix() {
			t.Errorf("TIME in Lua = %d, bubble clock = %d", secs, start.Unix())
		}

		sub := rdb.Subscribe(ctx, "ch")
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatalf("SUBSCRIBE: %v", err)
		}
		if n, err := rdb.Publish(ctx, "ch", "hello").Result(); err != nil || n != 1 {
			t.Fatalf("PUBLISH = %d, %v; want 1 subscriber", n, err)
		}
		msg, err := sub.ReceiveMessage(ctx)
		if err != nil || msg.Payload != "hello" {
			t.Fatalf("ReceiveMessage = %v, %v; want hello", msg, err)
		}
		if err := sub.Close(); err != nil {
			t.Fatalf("close pubsub: %v", err)
		}

		time.Sleep(11 * time.Second)
		if n, err := rdb.Exists(ctx, "k").Result(); err != nil || n != 0 {
			t.Fatalf("EXISTS after the TTL = %d, %v; want 0", n, err)
		}
		if got := time.Since(start); got != 11*time.Second {
			t.Errorf("bubble clock advanced %v, want exactly 11s", got)
		}
	})
}

// PubSub.ChannelWithSubscriptions starts go-redis's receive and health-check
// goroutines; they run on the fake clock (pinging every 3s) and exit after
// the PubSub is closed.
func TestBubbleChannel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m, opt := Bubble()
		defer m.Close()
		rdb := redis.NewClient(opt)
		defer rdb.Close()

		sub := rdb.Subscribe(ctx, "ch")
		defer sub.Close()
		ch := sub.ChannelWithSubscriptions()
		if s, ok := (<-ch).(*redis.Subscription); !ok || s.Channel != "ch" {
			t.Fatalf("first event %#v, want the subscription", s)
		}
		time.Sleep(time.Minute) // twenty health-check pings
		if n, err := rdb.Publish(ctx, "ch", "late").Result(); err != nil || n != 1 {
			t.Fatalf("PUBLISH = %d, %v; want 1 subscriber", n, err)
		}
		select {
		case ev := <-ch:
			if msg, ok := ev.(*redis.Message); !ok || msg.Payload != "late" {
				t.Fatalf("got %#v, want the message", ev)
			}
		case <-time.After(time.Second):
			t.Fatal("no message within 1s of bubble time")
		}
	})
}

// Faults compose with Bubble: the lost reply and go-redis's retry backoff
// both happen inside the bubble.
func TestBubbleWithFaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m, opt := Bubble()
		defer m.Close()
		f := NewFaults()
		opt.Dialer = f.Dialer(opt.Dialer)
		rdb := redis.NewClient(opt)
		defer rdb.Close()

		f.DropReply(func(args []string) bool { return args[0] == "INCR" })
		if got, err := rdb.Incr(ctx, "k").Result(); err != nil || got != 2 {
			t.Fatalf("INCR = %d, %v; want 2 (executed, reply lost, retried)", got, err)
		}
		if f.Fired() != 1 {
			t.Fatalf("Fired() = %d, want 1", f.Fired())
		}
	})
}
