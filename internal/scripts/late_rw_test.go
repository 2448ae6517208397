package scripts

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
)

// Every request that changes a read hold names it (ReadName): a copy sent
// for the owner's earlier read hold, or before a later request of the same
// hold, that reaches Redis late changes nothing in the owner's fresh hold
// (fixed lease, count, name, last request) and says so. A late watchdog
// renewal of the earlier hold must not cut the fresh hold's fixed lease
// to the watchdog's TTL: a writer would then get in beside the reader.
func TestLateCopiesRW(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		rw := testRW("a")
		read := func(req string, held bool, lease time.Duration, count int64) {
			t.Helper()
			a, err := rw.Read(ctx, rdb, req, held, lease)
			require.NoError(t, err)
			require.True(t, a.OK, req)
			require.Equal(t, count, a.Count, req)
		}
		runlock := func(req string, named string, count int64) {
			t.Helper()
			n, err := rw.RUnlock(ctx, rdb, req, false, ReadName(named))
			require.NoError(t, err)
			require.Equal(t, count, n, req)
		}
		rextend := func(req string, lease time.Duration) {
			t.Helper()
			ok, err := rw.RExtend(ctx, rdb, req, lease, ReadName("a:5"))
			require.NoError(t, err)
			require.True(t, ok, req)
		}
		// The earlier hold a:1, renewed by the watchdog, re-entered by a:2
		// and released by a:3 and a:4; the fresh hold a:5 has a fixed
		// lease, re-entered by a:6, a:7 released one, a:8 re-entered; a:9
		// and a:10 extended it.
		read("a:1", false, time.Second, 1)
		read("a:2", true, time.Second, 2)
		runlock("a:3", "a:1", 1)
		runlock("a:4", "a:1", 0)
		read("a:5", false, 10*time.Second, 1)
		read("a:6", true, 10*time.Second, 2)
		runlock("a:7", "a:5", 1)
		read("a:8", true, 10*time.Second, 2)
		rextend("a:9", 20*time.Second)
		rextend("a:10", 10*time.Second)

		renew, keys, args := rw.Renewal(false, time.Second)
		old := ReadName("a:1")
		checkLateCopies(t, ctx, rdb, []lateCopy{
			{"the earlier hold's renewal", int64Of(ctx, rdb, renew, keys, append(args, old)...), int64(0)},
			{"the earlier hold's RExtend", func() (any, error) { return rw.RExtend(ctx, rdb, "a:2", time.Second, old) }, false},
			{"the earlier hold's release of one of two", func() (any, error) { return rw.RUnlock(ctx, rdb, "a:3", false, old) }, int64(-1)},
			{"the earlier hold's release to zero", func() (any, error) { return rw.RUnlock(ctx, rdb, "a:4", false, old) }, int64(0)},
			{"the earlier hold's release of every hold", func() (any, error) { return rw.RUnlock(ctx, rdb, "a:4", true, old) }, int64(0)},
			{"the fresh hold's RExtend sent before its last", func() (any, error) { return rw.RExtend(ctx, rdb, "a:9", 20*time.Second, ReadName("a:5")) }, true},
			{"the fresh hold's last RExtend, retried", func() (any, error) { return rw.RExtend(ctx, rdb, "a:10", 10*time.Second, ReadName("a:5")) }, true},
			{"the fresh hold's release sent before its re-entry", func() (any, error) { return rw.RUnlock(ctx, rdb, "a:7", false, ReadName("a:5")) }, int64(2)},
			{"the earlier hold's give-back", func() (any, error) { undone, _, err := rw.Leave(ctx, rdb, "a:1", false, false); return undone, err }, false},
			{"the fresh hold's re-entry's give-back", func() (any, error) { undone, _, err := rw.Leave(ctx, rdb, "a:6", false, false); return undone, err }, false},
		}, ":rel:a")
	})
}

// A force ends the holds there were when its caller read the fence, and
// moves the fence on: a copy of it that arrives after a read hold was taken
// again (a go-redis retry of a force that was applied) finds the fence
// moved and forces nothing, whether the force ended a writer or readers.
func TestLateForceCopyRW(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		a, b := testRW("a"), testRW("b")
		for _, forced := range []string{"read", "write"} {
			t.Run(forced, func(t *testing.T) {
				require.NoError(t, rdb.FlushAll(ctx).Err())
				var took Acquired
				var err error
				if forced == "read" {
					took, err = b.Read(ctx, rdb, "b:1", false, time.Minute)
				} else {
					took, _, err = b.Write(ctx, rdb, "b:1", NoToken, NewLease(time.Minute, nil), false, NoRegistry, time.Minute)
				}
				require.NoError(t, err)
				require.True(t, took.OK)
				upto, err := b.Lock.LastToken(ctx, rdb)
				require.NoError(t, err)
				got, err := b.Force(ctx, rdb, "", upto)
				require.NoError(t, err)
				require.Equal(t, ForceDone, got)
				fresh, err := a.Read(ctx, rdb, "a:1", false, 10*time.Second)
				require.NoError(t, err)
				require.True(t, fresh.OK)
				require.Greater(t, fresh.Token, took.Token, "a read hold after a force has a greater token")
				checkLateCopies(t, ctx, rdb, []lateCopy{
					{"the force, again", func() (any, error) { return b.Force(ctx, rdb, "", upto) }, ForceMoved},
				}, ":rel:a", ":rel:b")
			})
		}
	})
}
