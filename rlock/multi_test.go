package rlock_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rfairlock"
	"github.com/redcoord/redcoord/rlock"
)

// A MultiMutex takes every name in one round trip, each with its own
// token; each name is then an rlock lock that others cannot take; Lock
// again re-enters without I/O; the last Unlock frees every name.
func TestMultiLocksEveryName(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx := context.Background()
		p := locktest.NewProc(t, srv.Options())
		defer p.Kill()
		other := locktest.NewClient(t, srv.Client(t))
		mm := rlock.NewMulti(p.C, []string{"b", "a", "c"})
		assert.ElementsMatch(t, []string{"a", "b", "c"}, mm.Names())
		assert.Nil(t, mm.Tokens())

		warm := rlock.NewMulti(p.C, []string{"d", "e"}) // the script loaded, the server checked
		require.NoError(t, warm.Lock(ctx))
		require.NoError(t, warm.Unlock(ctx))
		before := p.RT.Load()
		require.NoError(t, mm.Lock(ctx))
		assert.Equal(t, int64(1), p.RT.Load()-before, "one round trip for free names on one server")
		tokens := mm.Tokens()
		require.Len(t, tokens, 3)
		for _, name := range []string{"a", "b", "c"} {
			assert.Positive(t, tokens[name], name)
			ok, err := rlock.New(other, name).TryLock(ctx)
			require.NoError(t, err)
			assert.False(t, ok, "%s is held", name)
		}

		held, cancel := mm.Context(ctx)
		defer cancel()
		before = p.RT.Load()
		require.NoError(t, mm.Lock(held))
		require.NoError(t, mm.Unlock(ctx))
		assert.Equal(t, before, p.RT.Load(), "a re-entry and its Unlock send nothing")
		assert.Equal(t, tokens, mm.Tokens())

		require.NoError(t, mm.Unlock(ctx))
		assert.Nil(t, mm.Tokens())
		assert.ErrorIs(t, mm.Unlock(ctx), redcoord.ErrNotHeld)
		for _, name := range []string{"a", "b", "c"} {
			held, err := rlock.New(other, name).IsLocked(ctx)
			require.NoError(t, err)
			assert.False(t, held, name)
		}
		assert.False(t, locktest.IsClosed(mm.Lost()), "a released hold is not lost")
	})
}

// All or none: while another handle holds one name, TryLock takes none,
// and a Lock that ends with its context leaves Redis as it was; once the
// name is free, the waiting Lock takes every name.
func TestMultiAllOrNone(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		c := locktest.NewClient(t, rdb)
		holder := rlock.New(locktest.NewClient(t, rdb), "b")
		require.NoError(t, holder.Lock(ctx))
		before := locktest.Keys(t, rdb)

		mm := rlock.NewMulti(c, []string{"a", "b", "c"})
		ok, err := mm.TryLock(ctx)
		require.NoError(t, err)
		assert.False(t, ok)
		assert.Equal(t, before, locktest.Keys(t, rdb), "TryLock took nothing")

		wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		err = mm.Lock(wctx)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorIs(t, err, redcoord.ErrNotAcquired)
		assert.Equal(t, before, locktest.WithoutMarkers(locktest.Keys(t, rdb)), "a cancelled Lock gave back what it took")

		done := make(chan error, 1)
		go func() { done <- mm.Lock(ctx) }()
		time.Sleep(50 * time.Millisecond)
		require.NoError(t, holder.Unlock(ctx))
		require.NoError(t, <-done)
		assert.Len(t, mm.Tokens(), 3)
		require.NoError(t, mm.Unlock(ctx))
	})
}

// 12 handles in 4 processes lock random sets of 2 or 3 of 6 names, each in
// its own order, 20 times each: no two holders of a name at once, and no
// deadlock (every Lock returns, within a minute in all).
func TestMultiOverlappingSetsDoNotDeadlock(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cs := make([]*redcoord.Client, 4)
		for i := range cs {
			cs[i] = locktest.NewClient(t, srv.Client(t))
		}
		lockRandomSets(ctx, t, cs, []string{"n0", "n1", "n2", "n3", "n4", "n5"}, 12, 20)
	})
}

// lockRandomSets runs workers handles, over the Clients cs in turn, each
// locking rounds random sets of 2 or 3 of names with a MultiMutex, in a
// random order, holding them up to half a millisecond: it fails the test
// if a name has two holders at once, or if ctx ends first (a deadlock).
func lockRandomSets(ctx context.Context, t *testing.T, cs []*redcoord.Client, names []string, workers, rounds int) {
	t.Helper()
	holders := make([]int, len(names))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(w), uint64(len(names))))
			for range rounds {
				perm := rnd.Perm(len(names))[:2+rnd.IntN(2)]
				set := make([]string, len(perm))
				for i, k := range perm {
					set[i] = names[k]
				}
				mm := rlock.NewMulti(cs[w%len(cs)], set)
				if err := mm.Lock(ctx); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, k := range perm {
					if holders[k]++; holders[k] > 1 {
						t.Errorf("%s has two holders", names[k])
					}
				}
				mu.Unlock()
				time.Sleep(time.Duration(rnd.IntN(500)) * time.Microsecond)
				mu.Lock()
				for _, k := range perm {
					holders[k]--
				}
				mu.Unlock()
				if err := mm.Unlock(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, ctx.Err(), "a Lock did not return: deadlock?")
}

// A name whose hold is lost (its key deleted) closes Lost at the next
// renewal; Unlock releases the other names and reports ErrLeaseLost.
func TestMultiLost(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		c := locktest.NewClient(t, rdb, redcoord.WithLeaseTTL(300*time.Millisecond))
		mm := rlock.NewMulti(c, []string{"x", "y"})
		require.NoError(t, mm.Lock(ctx))
		require.NoError(t, rdb.Del(ctx, "rc:{y}:lock").Err())
		select {
		case <-mm.Lost():
		case <-time.After(10 * time.Second):
			t.Fatal("Lost stayed open")
		}
		err := mm.Unlock(ctx)
		assert.ErrorIs(t, err, redcoord.ErrLeaseLost)
		assert.Contains(t, err.Error(), `"y"`)
		held, err := rlock.New(c, "x").IsLocked(ctx)
		require.NoError(t, err)
		assert.False(t, held, "the other name is released")
	})
}

// Bad input is refused at once, naming it, with nothing written; a name
// another primitive holds is ErrWrongType, with nothing taken.
func TestMultiBadInput(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		c := locktest.NewClient(t, rdb)
		many := make([]string, rlock.MaxMultiNames+1)
		for i := range many {
			many[i] = fmt.Sprint("n", i)
		}
		for _, tc := range []struct {
			mm   *rlock.MultiMutex
			want string
		}{
			{rlock.NewMulti(nil, []string{"a"}), "c: nil"},
			{rlock.NewMulti(c, nil), "names: must not be empty"},
			{rlock.NewMulti(c, many), "names: must be at most 64, got 65"},
			{rlock.NewMulti(c, []string{"a", ""}), "names[1]"},
			{rlock.NewMulti(c, []string{"a", "b{c}"}), "names[1]"},
			{rlock.NewMulti(c, []string{"a", "b", "a"}), `"a" appears more than once`},
			{rlock.NewMulti(c, []string{"a"}, rlock.WithMaxPollInterval(-1)), "WithMaxPollInterval"},
		} {
			for what, err := range map[string]error{
				"Lock":          tc.mm.Lock(ctx),
				"LockWithLease": tc.mm.LockWithLease(ctx, time.Second),
				"TryLock":       locktest.Second(tc.mm.TryLock(ctx)),
				"Unlock":        tc.mm.Unlock(ctx),
			} {
				assert.ErrorIs(t, err, redcoord.ErrInvalidArgument, what)
				assert.Contains(t, err.Error(), tc.want, what)
			}
		}
		mm := rlock.NewMulti(c, []string{"a", "b"})
		assert.ErrorIs(t, mm.LockWithLease(ctx, 0), redcoord.ErrInvalidArgument)
		done, cancel := context.WithCancel(ctx)
		cancel()
		assert.ErrorIs(t, mm.Lock(done), context.Canceled)
		assert.Empty(t, locktest.Keys(t, rdb), "nothing written")

		f := rfairlock.New(c, "b")
		require.NoError(t, f.Lock(ctx))
		before := rdb.Keys(ctx, "*").Val()
		err := mm.Lock(ctx)
		assert.ErrorIs(t, err, redcoord.ErrWrongType)
		assert.ElementsMatch(t, before, rdb.Keys(ctx, "*").Val(), "nothing written, not even a leave marker")
		assert.True(t, strings.Contains(err.Error(), "rfairlock"), err)
		held, err := rlock.New(c, "a").IsLocked(ctx)
		require.NoError(t, err)
		assert.False(t, held, "nothing taken")
		require.NoError(t, f.Unlock(ctx))

		closed := locktest.NewClient(t, rdb)
		require.NoError(t, closed.Close(ctx))
		assert.ErrorIs(t, rlock.NewMulti(closed, []string{"a"}).Lock(ctx), redcoord.ErrClosed)
	})
}

// A process that dies holding a MultiMutex (its Client closed, no Unlock)
// keeps each name at most a lease TTL after its last renewal: a waiting
// MultiMutex in another process then takes them all, each with a higher
// token, and nothing of the dead holder's remains.
func TestMultiCrashedHolder(t *testing.T) {
	locktest.InBubble(t, 2, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		const ttl = 30 * time.Second // the Client's default lease TTL
		dead := rlock.NewMulti(ps[0].C, []string{"a", "b", "c"})
		require.NoError(t, dead.Lock(ctx))
		old := dead.Tokens()
		next := rlock.NewMulti(ps[1].C, []string{"c", "a"})
		done := make(chan error, 1)
		go func() { done <- next.Lock(ctx) }()
		synctest.Wait()
		time.Sleep(ttl / 2)
		ps[0].Kill()
		killed := time.Now()
		require.NoError(t, <-done)
		assert.LessOrEqual(t, time.Since(killed), ttl, "within a lease TTL of the last renewal")
		for name, tok := range next.Tokens() {
			assert.Greater(t, tok, old[name], name)
		}
		assert.False(t, mr.Exists("rc:{b}:lock"), "the dead holder's other name expired")
		require.NoError(t, next.Unlock(ctx))
	})
}
