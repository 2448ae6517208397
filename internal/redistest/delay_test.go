package redistest

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
)

// A held reply arrives d later on the bubble's clock; one held past the read
// deadline is lost, and go-redis retries the command the server executed.
func TestDelayReply(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m, opt := Bubble()
		defer m.Close()
		f := NewFaults()
		opt.Dialer = f.Dialer(opt.Dialer)
		opt.ReadTimeout = time.Second
		rdb := redis.NewClient(opt)
		defer rdb.Close()
		isIncr := func(args []string) bool { return args[0] == "INCR" }

		f.DelayReply(isIncr, 300*time.Millisecond)
		start := time.Now()
		if got, err := rdb.Incr(ctx, "k").Result(); err != nil || got != 1 {
			t.Fatalf("INCR = %d, %v; want 1", got, err)
		}
		if took := time.Since(start); took != 300*time.Millisecond {
			t.Errorf("held reply took %v, want 300ms", took)
		}

		f.DelayReply(isIncr, 5*time.Second)
		start = time.Now()
		if got, err := rdb.Incr(ctx, "k").Result(); err != nil || got != 3 {
			t.Errorf("INCR held past the deadline = %d, %v; want 3 (executed twice)", got, err)
		}
		if took := time.Since(start); took < time.Second || took > 2*time.Second {
			t.Errorf("INCR held past the deadline took %v, want about the 1s read timeout", took)
		}
		if n := f.Delayed(); n != 2 {
			t.Errorf("Delayed() = %d, want 2", n)
		}
	})
}
