package scripts

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/redistest"
)

// refusedAs turns an acquire's ErrNotAcquired (a request given up, or taken
// and since released) into the reply "refused", for a lateCopy.
func refusedAs(ok bool, err error) (any, error) {
	if errors.Is(err, errs.ErrNotAcquired) {
		return "refused", nil
	}
	return ok, err
}

// The counting semaphore's permits have no holder to name: each request
// names itself (its request id), and the name's request markers remember
// it for MarkerTTL. A late copy of an acquire, a release or a give-back
// changes no permit count, and a waiter's heartbeat or a Client's
// registration renewal of a wait that ended finds nothing to renew.
func TestLateCopiesSem(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		s := testSem()
		_, err := s.Set(ctx, rdb, "o:0", SetTotal, 3)
		require.NoError(t, err)
		acquire := func(req string, n int64) func() (any, error) {
			return func() (any, error) {
				a, err := s.Acquire(ctx, rdb, req, n, SemTry, time.Minute)
				return refusedAs(a.OK, err)
			}
		}
		release := func(req string, n int64) func() (any, error) {
			return func() (any, error) { r, err := s.Release(ctx, rdb, req, n, ""); return r.Available, err }
		}
		leave := func(req string, n int64) func() (any, error) {
			return func() (any, error) {
				left, err := s.Leave(ctx, rdb, req, n, false, time.Minute, 0)
				return left.GaveBack, err
			}
		}
		// o:1 took a permit and o:2 gave it back; o:3 took two, o:4 gave
		// one back; o:5 took one, and gave it up (o:5's leave): one held.
		// o:10 took two; o:11, a TryAcquire of two, found none; o:12 gave
		// o:10's two back.
		for _, st := range []struct {
			send func() (any, error)
			want any
		}{{acquire("o:1", 1), true}, {release("o:2", 1), int64(3)}, {acquire("o:3", 2), true},
			{release("o:4", 1), int64(2)}, {acquire("o:5", 1), true}, {leave("o:5", 1), true},
			{acquire("o:10", 2), true}, {acquire("o:11", 2), false}, {release("o:12", 2), int64(2)}} {
			got, err := st.send()
			require.NoError(t, err)
			require.Equal(t, st.want, got)
		}
		heartbeat, keys, args := s.Heartbeat("o:6", time.Minute)
		beat, bkeys, bargs := s.Beat("o", time.Minute)
		checkLateCopies(t, ctx, rdb, []lateCopy{
			{"an acquire applied", acquire("o:1", 1), true},
			{"an acquire given up", acquire("o:5", 1), "refused"},
			{"a TryAcquire that found the permits taken", acquire("o:11", 2), false},
			{"a release", release("o:2", 1), int64(2)},
			{"a release of one of two", release("o:4", 1), int64(2)},
			{"a give-back", leave("o:5", 1), false},
			{"the heartbeat of a wait that ended", int64Of(ctx, rdb, heartbeat, keys, args...), int64(0)},
			{"the renewal of a registration that ended", int64Of(ctx, rdb, beat, bkeys, bargs...), int64(0)},
		}, ":done")
	})
}

// An expirable permit is named by its id, the request that took it: a
// late copy of a renewal, an Extend, a release or a give-back of the
// owner's earlier permit changes nothing in its fresh one, nor does a copy
// of an Extend of the fresh permit numbered up to its last one.
func TestLateCopiesXSem(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		x := testXSem()
		_, err := x.Set(ctx, rdb, "o:0", SetTotal, 3)
		require.NoError(t, err)
		acquire := func(id string, lease time.Duration) func() (any, error) {
			return func() (any, error) {
				a, err := x.Acquire(ctx, rdb, id, lease, SemTry, time.Minute)
				return refusedAs(a.OK, err)
			}
		}
		release := func(id, req string) func() (any, error) {
			return func() (any, error) { held, _, err := x.Release(ctx, rdb, id, req, ""); return held, err }
		}
		extend := func(req, id string, lease time.Duration) func() (any, error) {
			return func() (any, error) { return x.Extend(ctx, rdb, req, id, lease) }
		}
		leave := func(id string) func() (any, error) {
			return func() (any, error) { return x.Leave(ctx, rdb, id, false, time.Minute, 0) }
		}
		// Permit o:1, renewed by the watchdog, released by o:2; permit o:3,
		// extended by o:4 then o:5; permit o:6 taken and given up.
		for _, st := range []struct {
			send func() (any, error)
			want any
		}{{acquire("o:1", time.Second), true}, {release("o:1", "o:2"), true}, {acquire("o:3", time.Second), true},
			{extend("o:4", "o:3", 20*time.Second), true}, {extend("o:5", "o:3", 10*time.Second), true},
			{acquire("o:6", time.Minute), true}, {leave("o:6"), true}} {
			got, err := st.send()
			require.NoError(t, err)
			require.Equal(t, st.want, got)
		}
		renew, keys, args := x.Renewal("o:1", time.Second)
		renewFresh, fkeys, fargs := x.Renewal("o:3", time.Second)
		beat, bkeys, bargs := x.Beat("o", time.Minute)
		checkLateCopies(t, ctx, rdb, []lateCopy{
			{"the earlier permit's renewal", int64Of(ctx, rdb, renew, keys, args...), int64(0)},
			{"the earlier permit's Extend", extend("o:2", "o:1", time.Second), false},
			{"the earlier permit's acquire", acquire("o:1", time.Second), "refused"},
			{"the earlier permit's release", release("o:1", "o:2"), true},
			{"the fresh permit's renewal, sent before its Extend", int64Of(ctx, rdb, renewFresh, fkeys, fargs...), int64(1)},
			{"the fresh permit's Extend sent before its last", extend("o:4", "o:3", 20*time.Second), true},
			{"the fresh permit's last Extend, retried", extend("o:5", "o:3", 10*time.Second), true},
			{"a give-back", leave("o:6"), false},
			{"the acquire given up", acquire("o:6", time.Minute), "refused"},
			{"the renewal of a registration that ended", int64Of(ctx, rdb, beat, bkeys, bargs...), int64(0)},
		}, ":done")
	})
}
