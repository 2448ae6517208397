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

// A copy of a force (a go-redis retry of one that was applied, or a late
// copy) replies as the force did and changes nothing: not a read hold
// taken after a force that ended a writer or readers, nor one taken after
// a force that found the lock free (a read hold does not move the fence),
// nor one taken after the fence was deleted (Forget). Every force that
// runs moves the fence on, so a read hold after it has a greater token.
func TestLateForceCopyRW(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		a, b := testRW("a"), testRW("b")
		for _, forced := range []string{"read", "write", "free", "forgotten"} {
			t.Run(forced, func(t *testing.T) {
				require.NoError(t, rdb.FlushAll(ctx).Err())
				var took Acquired
				var err error
				switch forced {
				case "read":
					took, err = b.Read(ctx, rdb, "b:1", false, time.Minute)
				case "write", "forgotten":
					took, _, err = b.Write(ctx, rdb, "b:1", NoToken, NewLeaseArg(time.Minute, nil), false, NoRegistry, time.Minute)
				case "free":
					took.OK = true
				}
				require.NoError(t, err)
				require.True(t, took.OK)
				upto := fenceNow(t, ctx, rdb, b.Lock.Fence)
				got, err := b.Force(ctx, rdb, "", upto, "b:2")
				require.NoError(t, err)
				want := ForceDone
				if forced == "free" {
					want = ForceFree
				}
				require.Equal(t, want, got)
				if forced == "forgotten" {
					require.NoError(t, rdb.Del(ctx, b.Lock.Fence).Err())
				}
				fresh, err := a.Read(ctx, rdb, "a:1", false, 10*time.Second)
				require.NoError(t, err)
				require.True(t, fresh.OK)
				if forced != "forgotten" {
					require.Greater(t, fresh.Token, took.Token, "a read hold after a force has a greater token")
				}
				checkLateCopies(t, ctx, rdb, []lateCopy{
					{"the force, again", func() (any, error) { return b.Force(ctx, rdb, "", upto, "b:2") }, want},
					{"another force told the fence as it was", func() (any, error) {
						return b.Force(ctx, rdb, "", upto, "b:3")
					}, map[bool]Forced{true: ForceMoved, false: ForceDone}[forced != "forgotten" || upto != "0"]},
				}, ":rel:a", ":rel:b")
			})
		}
	})
}
