package relection_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/relection"
	"github.com/redcoord/redcoord/rlock"
)

// leaderErr returns Leader's error.
func leaderErr(_ relection.Leader, _ bool, err error) error { return err }

// candidates returns how many candidates of name wait, as Redis has them.
func candidates(ctx context.Context, rdb *redis.Client, name string) int64 {
	return rdb.ZCard(ctx, "rc:{"+name+"}:elect-alive").Val()
}

// Candidates lead in the order they campaigned; each Resign hands the lead
// to the next at once, in a later term, with the value it campaigned with;
// an observer sees nobody, then every leader, in order, then nobody again
// after the last Resign, which leaves nothing in Redis but the log and the
// fence.
func TestResignHandsOnInOrder(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var es []*relection.Election
		for range 3 {
			es = append(es, relection.New(locktest.NewClient(t, rdb), "leader"))
		}
		watcher := relection.New(locktest.NewClient(t, rdb), "leader")
		_, ok, err := watcher.Leader(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "nobody leads yet")
		seen := watcher.Observe(ctx)
		assert.Equal(t, relection.Leader{}, <-seen, "nobody leads yet")

		require.NoError(t, es[0].Campaign(ctx, "node-0"))
		done := make([]chan error, 3)
		for i := 1; i < 3; i++ {
			done[i] = make(chan error, 1)
			go func() { done[i] <- es[i].Campaign(ctx, "node-"+string(rune('0'+i))) }()
			locktest.Eventually(t, func() bool { return candidates(ctx, rdb, "leader") == int64(i) }, "candidate queued")
		}
		var terms []uint64
		for i := range 3 {
			if i > 0 {
				require.NoError(t, <-done[i])
			}
			l, ok, err := watcher.Leader(ctx)
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, "node-"+string(rune('0'+i)), l.Value)
			assert.Equal(t, es[i].Token(), l.Term)
			assert.WithinDuration(t, time.Now(), l.Since, 10*time.Second)
			got := <-seen
			assert.Equal(t, l, got, "the observer sees the same leader")
			terms = append(terms, l.Term)
			require.NoError(t, es[i].Resign(ctx))
			assert.Zero(t, es[i].Token(), "a resigned handle has no term")
		}
		assert.Less(t, terms[0], terms[1])
		assert.Less(t, terms[1], terms[2])
		_, ok, err = watcher.Leader(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "nobody leads after the last Resign")
		nobody := <-seen
		assert.Zero(t, nobody.Term, "the observer sees that nobody leads")
		assert.WithinDuration(t, time.Now(), nobody.Since, 10*time.Second)
		assert.ErrorIs(t, es[0].Resign(ctx), redcoord.ErrNotHeld)
		cancel()
		for range seen {
		}
		if srv.Mini == nil {
			assert.ElementsMatch(t, []string{"rc:{leader}:elect-log", "rc:{leader}:fence"}, locktest.Keys(t, rdb))
		}
	})
}

// A Campaign whose ctx ends leaves the queue and no trace; one whose
// Client is closed ends too.
func TestCampaignEndsWithItsContext(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		leader := relection.New(locktest.NewClient(t, rdb), "jobs")
		require.NoError(t, leader.Campaign(ctx, "a"))

		wctx, cancel := context.WithCancel(ctx)
		c := locktest.NewClient(t, rdb)
		done := make(chan error, 1)
		go func() { done <- relection.New(c, "jobs").Campaign(wctx, "b") }()
		locktest.Eventually(t, func() bool { return candidates(ctx, rdb, "jobs") == 1 }, "candidate queued")
		cancel()
		err := <-done
		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorIs(t, err, redcoord.ErrNotAcquired)
		assert.Zero(t, candidates(ctx, rdb, "jobs"), "the candidate left")

		go func() { done <- relection.New(c, "jobs").Campaign(ctx, "b") }()
		locktest.Eventually(t, func() bool { return candidates(ctx, rdb, "jobs") == 1 }, "candidate queued")
		require.NoError(t, c.Close(ctx))
		assert.ErrorIs(t, <-done, redcoord.ErrClosed)
		assert.Zero(t, candidates(ctx, rdb, "jobs"), "the candidate left")

		require.NoError(t, leader.Resign(ctx))
		_, ok, err := leader.Leader(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "nobody was left to lead")
	})
}

// The leader proclaims new values, which Leader reports and observers see
// in the same term; a value it already says is no change; a handle that
// does not lead gets ErrNotHeld; Campaign on the leading handle proclaims.
func TestProclaim(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		e := relection.New(locktest.NewClient(t, rdb), "svc")
		other := relection.New(locktest.NewClient(t, rdb), "svc")
		seen := other.Observe(ctx)
		assert.Zero(t, (<-seen).Term, "nobody leads yet")

		assert.ErrorIs(t, e.Proclaim(ctx, "x"), redcoord.ErrNotHeld)
		require.NoError(t, e.Campaign(ctx, "10.0.0.1:80"))
		term := e.Token()
		require.NoError(t, e.Proclaim(ctx, "10.0.0.2:80"))
		require.NoError(t, e.Proclaim(ctx, "10.0.0.2:80"))
		require.NoError(t, e.Campaign(ctx, "10.0.0.3:80"))
		assert.Equal(t, term, e.Token(), "proclaiming keeps the term")
		assert.ErrorIs(t, other.Proclaim(ctx, "me"), redcoord.ErrNotHeld)

		var got []string
		for range 3 {
			l := <-seen
			assert.Equal(t, term, l.Term)
			got = append(got, l.Value)
		}
		assert.Equal(t, []string{"10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80"}, got)
		l, ok, err := other.Leader(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, "10.0.0.3:80", l.Value)
		require.NoError(t, e.Resign(ctx))
	})
}

// A new observer first receives the current leader (nobody, before the
// first Campaign); a Resign with nobody to follow is sent as nobody.
func TestObserveStartsWithTheLeader(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := locktest.NewClient(t, rdb)
		e := relection.New(c, "svc")
		early := relection.New(c, "svc").Observe(ctx)
		assert.Equal(t, relection.Leader{}, <-early)
		require.NoError(t, e.Campaign(ctx, "a"))
		require.NoError(t, e.Proclaim(ctx, "b"))
		assert.Equal(t, "a", (<-early).Value)
		assert.Equal(t, "b", (<-early).Value)

		late := relection.New(locktest.NewClient(t, rdb), "svc").Observe(ctx)
		l := <-late
		assert.Equal(t, "b", l.Value, "the current leader first, not the log's history")
		assert.Equal(t, e.Token(), l.Term)
		require.NoError(t, e.Resign(ctx))
		assert.Zero(t, (<-late).Term, "nobody leads")
		assert.Zero(t, (<-early).Term, "nobody leads")
		cancel()
		_, open := <-late
		assert.False(t, open, "closed when ctx ends")
	})
}

// Context is cancelled when the lead ends: ErrResigned after Resign,
// ErrLeaseLost when the lead is lost (its key deleted); at once, with
// ErrNotHeld, for a handle that does not lead.
func TestContext(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		e := relection.New(locktest.NewClient(t, rdb, redcoord.WithLeaseTTL(300*time.Millisecond)), "svc")
		lctx, cancel := e.Context(ctx)
		<-lctx.Done()
		assert.ErrorIs(t, context.Cause(lctx), redcoord.ErrNotHeld)
		cancel()

		require.NoError(t, e.Campaign(ctx, "a"))
		lctx, cancel = e.Context(ctx)
		require.NoError(t, lctx.Err())
		require.NoError(t, e.Resign(ctx))
		<-lctx.Done()
		assert.ErrorIs(t, context.Cause(lctx), relection.ErrResigned)
		assert.ErrorIs(t, context.Cause(lctx), redcoord.ErrNotHeld)
		cancel()

		require.NoError(t, e.Campaign(ctx, "b"))
		lctx, cancel = e.Context(ctx)
		defer cancel()
		require.NoError(t, rdb.Del(ctx, "rc:{svc}:lock").Err())
		<-lctx.Done() // at the next renewal
		assert.ErrorIs(t, context.Cause(lctx), redcoord.ErrLeaseLost)
		assert.True(t, locktest.IsClosed(e.Lost()))
		assert.ErrorIs(t, e.Proclaim(ctx, "c"), redcoord.ErrNotHeld)
		assert.ErrorIs(t, e.Resign(ctx), redcoord.ErrLeaseLost)
	})
}

// A leader whose term ended behind its back (its key deleted) learns it
// from Proclaim: ErrLeaseLost, and Lost closes. A Campaign that finds it
// so campaigns afresh, in a new term.
func TestProclaimFindsTheTermEnded(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		e := relection.New(locktest.NewClient(t, rdb), "svc")
		require.NoError(t, e.Campaign(ctx, "a"))
		first := e.Token()
		require.NoError(t, rdb.Del(ctx, "rc:{svc}:lock").Err())
		err := e.Proclaim(ctx, "b")
		assert.ErrorIs(t, err, redcoord.ErrLeaseLost)
		assert.True(t, locktest.IsClosed(e.Lost()))
		_, ok, err := e.Leader(ctx)
		require.NoError(t, err)
		assert.False(t, ok)

		require.NoError(t, e.Campaign(ctx, "c"))
		lost := e.Lost()
		require.NoError(t, rdb.Del(ctx, "rc:{svc}:lock").Err())
		require.NoError(t, e.Campaign(ctx, "d"), "a Campaign that finds the term ended campaigns afresh")
		assert.True(t, locktest.IsClosed(lost))
		l, ok, err := e.Leader(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, "d", l.Value)
		assert.Greater(t, l.Term, first)
		assert.Equal(t, e.Token(), l.Term)
		require.NoError(t, e.Resign(ctx))
	})
}

// Bad input is refused at once, naming the argument, with nothing written;
// a closed Client and a done ctx too.
func TestBadInput(t *testing.T) {
	srv := redistest.Mini(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	c := locktest.NewClient(t, rdb)
	for _, tc := range []struct {
		e    *relection.Election
		arg  string
		want string
	}{
		{relection.New(nil, "x"), "c", "nil"},
		{relection.New(c, ""), "name", "empty"},
		{relection.New(c, "a{b}"), "name", "brace"},
		{relection.New(c, "x", nil), "opts", "nil"},
		{relection.New(c, "x", relection.WithMaxPollInterval(0)), "WithMaxPollInterval", "> 0"},
	} {
		for what, err := range map[string]error{
			"Campaign": tc.e.Campaign(ctx, "v"),
			"Resign":   tc.e.Resign(ctx),
			"Proclaim": tc.e.Proclaim(ctx, "v"),
			"Leader":   leaderErr(tc.e.Leader(ctx)),
		} {
			assert.ErrorIs(t, err, redcoord.ErrInvalidArgument, what)
			assert.Contains(t, err.Error(), tc.arg, what)
			assert.Contains(t, strings.ToLower(err.Error()), tc.want, what)
		}
		_, open := <-tc.e.Observe(ctx)
		assert.False(t, open, "Observe of a bad handle is closed")
	}
	e := relection.New(c, "x")
	for _, v := range []string{"", strings.Repeat("v", relection.MaxValueLen+1)} {
		for what, err := range map[string]error{"Campaign": e.Campaign(ctx, v), "Proclaim": e.Proclaim(ctx, v)} {
			assert.ErrorIs(t, err, redcoord.ErrInvalidArgument, what)
			assert.Contains(t, err.Error(), "value", what)
		}
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	err := e.Campaign(done, "v")
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, redcoord.ErrNotAcquired)
	_, open := <-e.Observe(done)
	assert.False(t, open)
	assert.Empty(t, locktest.Keys(t, rdb), "nothing written")

	closed := locktest.NewClient(t, rdb)
	require.NoError(t, closed.Close(ctx))
	e = relection.New(closed, "x")
	assert.ErrorIs(t, e.Campaign(ctx, "v"), redcoord.ErrClosed)
	assert.ErrorIs(t, leaderErr(e.Leader(ctx)), redcoord.ErrClosed)
	_, open = <-e.Observe(ctx)
	assert.False(t, open)
	assert.Empty(t, locktest.Keys(t, rdb), "nothing written")
}

// A name that another primitive holds, or whose log key holds another
// type, is ErrWrongType before anything is written; an observer of it ends.
func TestWrongType(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		c := locktest.NewClient(t, rdb)
		m := rlock.New(c, "taken")
		require.NoError(t, m.Lock(ctx))
		e := relection.New(c, "taken")
		assert.ErrorIs(t, e.Campaign(ctx, "v"), redcoord.ErrWrongType)
		assert.ErrorIs(t, leaderErr(e.Leader(ctx)), redcoord.ErrWrongType)
		_, open := <-e.Observe(ctx)
		assert.False(t, open, "an observer of a name of another kind ends")
		require.NoError(t, m.Unlock(ctx))

		require.NoError(t, rdb.Set(ctx, "rc:{log}:elect-log", "x", 0).Err())
		e = relection.New(c, "log")
		err := e.Campaign(ctx, "v")
		assert.ErrorIs(t, err, redcoord.ErrWrongType)
		assert.True(t, errors.Is(leaderErr(e.Leader(ctx)), redcoord.ErrWrongType))
		assert.Zero(t, rdb.Exists(ctx, "rc:{log}:lock", "rc:{log}:elect-queue", "rc:{log}:fence").Val(), "nothing written")
	})
}

// Two Campaigns on one handle: the second waits for the first, then
// proclaims its value; the handle leads once, and one Resign ends it.
func TestConcurrentCampaignsOnOneHandle(t *testing.T) {
	srv := redistest.Mini(t)
	rdb := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	holder := relection.New(locktest.NewClient(t, rdb), "svc")
	require.NoError(t, holder.Campaign(ctx, "h"))
	e := relection.New(locktest.NewClient(t, rdb), "svc")
	done := make(chan error, 2)
	go func() { done <- e.Campaign(ctx, "first") }()
	locktest.Eventually(t, func() bool { return candidates(ctx, rdb, "svc") == 1 }, "candidate queued")
	go func() { done <- e.Campaign(ctx, "second") }()
	require.NoError(t, holder.Resign(ctx))
	require.NoError(t, <-done)
	require.NoError(t, <-done)
	l, ok, err := e.Leader(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, e.Token(), l.Term)
	assert.Equal(t, "second", l.Value)
	require.NoError(t, e.Resign(ctx))
	_, ok, err = e.Leader(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "one Resign ends the lead")
}
