package scripts

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
)

func TestSemSmoke(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx := context.Background()
		rdb := srv.Client(t)
		s := Sem{Permits: "t:{s}:permits", Queue: "t:{s}:queue", Alive: "t:{s}:alive", Waiting: "t:{s}:waiting", Done: "t:{s}:done", Kind: "rsemaphore", Publish: "PUBLISH", Channel: "t:{s}:ch"}
		_, err := s.Acquire(ctx, rdb, "a:1", 1, false, time.Second)
		t.Log(err)
		r, err := s.Set(ctx, rdb, SetIfUnset, 3)
		require.NoError(t, err)
		t.Log(r)
		a, err := s.Acquire(ctx, rdb, "a:1", 2, false, time.Second)
		require.NoError(t, err)
		t.Log(a)
		a, err = s.Acquire(ctx, rdb, "a:1", 2, false, time.Second)
		t.Log(a, err)
		a, err = s.Acquire(ctx, rdb, "b:1", 2, true, time.Second)
		t.Log(a, err)
		a, err = s.Acquire(ctx, rdb, "c:1", 1, true, time.Second)
		t.Log("c queued behind b", a, err)
		n, err := s.Release(ctx, rdb, "a:2", 2)
		t.Log("release", n, err)
		a, err = s.Acquire(ctx, rdb, "b:1", 2, true, time.Second)
		t.Log("b granted", a, err)
		a, err = s.Acquire(ctx, rdb, "c:1", 2, true, time.Second)
		t.Log("c", a, err)
		n, err = s.Release(ctx, rdb, "a:3", 5)
		t.Log("over", n, err)
		st, err := s.State(ctx, rdb)
		t.Log(st, err)
		d, err := s.Drain(ctx, rdb)
		t.Log("drain", d, err)
		ok, err := s.Leave(ctx, rdb, "b:1", 2)
		t.Log("leave b", ok, err)

		x := XSem{Permits: "t:{x}:permits", Leases: "t:{x}:leases", Tokens: "t:{x}:tokens", Fence: "t:{x}:fence", Done: "t:{x}:done", Kind: "rsemaphore-expirable", Publish: "PUBLISH", Channel: "t:{x}:ch"}
		r, err = x.Set(ctx, rdb, SetTotal, 2)
		t.Log(r, err)
		xa, err := x.Acquire(ctx, rdb, "p1", time.Second)
		t.Log(xa, err)
		xa, err = x.Acquire(ctx, rdb, "p2", 2*time.Second)
		t.Log(xa, err)
		xa, err = x.Acquire(ctx, rdb, "p3", time.Second)
		t.Log("full", xa, err)
		ok, err = x.Release(ctx, rdb, "p1", "r1")
		t.Log(ok, err)
		ok, err = x.Release(ctx, rdb, "p1", "r1")
		t.Log("again", ok, err)
		ok, err = x.Release(ctx, rdb, "p1", "r2")
		t.Log("other req", ok, err)
		ok, err = x.Extend(ctx, rdb, "p2", time.Minute)
		t.Log("extend", ok, err)
		xs, err := x.State(ctx, rdb)
		t.Log(xs, err)
		ok, err = x.Leave(ctx, rdb, "p2")
		t.Log("leave", ok, err)
	})
}
