package redistest

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/roundtrip"
)

func TestRoundTrips(t *testing.T) {
	Both(t, func(t *testing.T, s *Server) {
		ctx := context.Background()
		rt := &RoundTrips{}
		rdb := s.Client(t)
		rdb.AddHook(rt)

		if err := rdb.Set(ctx, "a", "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if got := rt.Load(); got != 1 {
			t.Errorf("one SET: Load() = %d, want 1", got)
		}
		if got := rt.Commands("SET"); got != 1 {
			t.Errorf("one SET: Commands(SET) = %d, want 1", got)
		}

		rt.Reset()
		if got := rt.Load() + rt.Commands("set"); got != 0 {
			t.Fatalf("after Reset: Load()+Commands(set) = %d, want 0", got)
		}
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "a", "1", 0)
			p.Set(ctx, "b", "2", 0)
			p.Set(ctx, "c", "3", 0)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := rt.Load(); got != 1 {
			t.Errorf("pipeline of 3: Load() = %d, want 1", got)
		}
		if got := rt.Commands("set"); got != 3 {
			t.Errorf("pipeline of 3: Commands(set) = %d, want 3", got)
		}
		if got := rt.Commands("get"); got != 0 {
			t.Errorf("Commands(get) = %d, want 0", got)
		}

		// Calls marked Uncounted are not counted; the same call unmarked is.
		rt.Reset()
		if err := rdb.Get(roundtrip.Uncounted(ctx), "a").Err(); err != nil {
			t.Fatal(err)
		}
		if got := rt.Load() + rt.Commands("get"); got != 0 {
			t.Errorf("an Uncounted GET: Load()+Commands(get) = %d, want 0", got)
		}
		if err := rdb.Get(ctx, "a").Err(); err != nil {
			t.Fatal(err)
		}
		if got := rt.Load(); got != 1 {
			t.Errorf("a GET: Load() = %d, want 1", got)
		}

		// A Pub/Sub connection's handshake is not a round trip either.
		rt.Reset()
		sub := rdb.Subscribe(ctx, "ch")
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		if got := rt.Load(); got != 0 {
			t.Errorf("after SUBSCRIBE: Load() = %d, want 0", got)
		}
		if got := rt.Commands("hello"); got != 0 {
			t.Errorf("Commands(hello) = %d, want 0", got)
		}
	})
}
