package rrwlock_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rrwlock"
)

// The semantics of one name, on miniredis and a real redis-server: who may
// hold it with whom, re-entry, writer preference, downgrade, tokens and
// State. (Refusals, the upgrade among them, are in input_test.go;
// ForceUnlock is in cancel_test.go.)

func TestReadersShareWriterExcludes(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		c := locktest.NewClient(t, rdb)
		ctx := context.Background()
		rs := []*rrwlock.RWMutex{rrwlock.New(c, "n"), rrwlock.New(c, "n"), rrwlock.New(locktest.NewClient(t, rdb), "n")}
		w, w2 := rrwlock.New(c, "n"), rrwlock.New(c, "n")
		want := map[string]int64{}
		for _, r := range rs {
			require.NoError(t, r.RLock(ctx))
			want[r.Owner()] = 1
		}
		st := stateOf(t, w)
		assert.Equal(t, rrwlock.Read, st.Mode)
		assert.Equal(t, "read", st.Mode.String())
		assert.Equal(t, want, readersOf(st))
		assert.Zero(t, st.Writer)
		for _, r := range st.Readers {
			assert.Greater(t, r.Remaining, time.Duration(0))
			assert.LessOrEqual(t, r.Remaining, c.LeaseTTL())
		}
		assert.False(t, tryW(t, w), "a writer while readers read")
		assert.Zero(t, stateOf(t, w).WaitingWriters, "TryLock does not hold readers back")
		rs = append(rs, rrwlock.New(c, "n"))
		assert.True(t, tryR(t, rs[3]), "a fourth reader")
		for _, r := range rs {
			require.NoError(t, r.RUnlock(ctx))
		}
		assert.Equal(t, rrwlock.Free, stateOf(t, w).Mode)

		require.NoError(t, w.Lock(ctx))
		st = stateOf(t, w)
		assert.Equal(t, rrwlock.Write, st.Mode)
		assert.False(t, st.Writer.Fixed, "a renewed lease")
		assert.Equal(t, c.LeaseTTL(), st.Writer.Lease)
		assert.False(t, tryR(t, rs[0]), "a reader while written")
		assert.False(t, tryW(t, w2), "a second writer")
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		for _, err := range []error{rs[1].RLock(short), w2.Lock(short)} {
			assert.ErrorIs(t, err, redcoord.ErrNotAcquired)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
		}
		assert.Zero(t, stateOf(t, w).WaitingWriters, "a writer that gave up no longer waits")
		require.NoError(t, w.Unlock(ctx))
		assert.Equal(t, []string{"rc:{n}:fence"}, locktest.Keys(t, rdb), "only the fence counter stays")
	})
}

func TestReentrancy(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		c := locktest.NewClient(t, rdb)
		ctx := context.Background()
		r, w := rrwlock.New(c, "n"), rrwlock.New(c, "n")
		require.NoError(t, r.RLock(ctx))
		require.NoError(t, r.RLockWithLease(ctx, time.Minute))
		assert.True(t, tryR(t, r))
		assert.Equal(t, map[string]int64{r.Owner(): 3}, readersOf(stateOf(t, r)))
		for n := int64(2); n >= 1; n-- {
			require.NoError(t, r.RUnlock(ctx))
			assert.Equal(t, map[string]int64{r.Owner(): n}, readersOf(stateOf(t, r)), "each RLock needs its RUnlock")
			assert.False(t, tryW(t, w))
		}
		require.NoError(t, r.RUnlock(ctx))
		assert.ErrorIs(t, r.RUnlock(ctx), redcoord.ErrNotHeld)

		require.NoError(t, w.Lock(ctx))
		tok := w.Token()
		held, cancel := w.Context(ctx)
		defer cancel()
		require.NoError(t, w.LockWithLease(held, time.Minute))
		assert.True(t, tryW(t, w))
		st := stateOf(t, w)
		assert.Equal(t, int64(3), st.Writer.Count)
		assert.Equal(t, tok, st.Writer.Token, "re-entry keeps the token")
		assert.Equal(t, tok, w.Token())
		for n := int64(2); n >= 1; n-- {
			require.NoError(t, w.Unlock(ctx))
			assert.Equal(t, n, stateOf(t, w).Writer.Count, "each Lock needs its Unlock")
			assert.False(t, tryR(t, r))
		}
		require.NoError(t, w.Unlock(ctx))
		assert.ErrorIs(t, w.Unlock(ctx), redcoord.ErrNotHeld)
		assert.Equal(t, []string{"rc:{n}:fence"}, locktest.Keys(t, rdb))
	})
}

// A waiting writer holds new readers back; readers already in re-enter.
func TestWriterPreference(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		c := locktest.NewClient(t, rdb)
		ctx := context.Background()
		r1, r2, w := rrwlock.New(c, "n"), rrwlock.New(c, "n"), rrwlock.New(locktest.NewClient(t, rdb), "n")
		require.NoError(t, r1.RLock(ctx))
		assert.Zero(t, r1.RToken(), "no write yet")
		wDone := async(w.Lock)
		locktest.Eventually(t, func() bool { return stateOf(t, r1).WaitingWriters == 1 }, "the writer waits")

		assert.False(t, tryR(t, r2), "a new reader passed a waiting writer")
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		err := r2.RLock(short)
		assert.ErrorIs(t, err, redcoord.ErrNotAcquired)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.True(t, tryR(t, r1), "a reader re-enters while a writer waits")
		require.NoError(t, r1.RLock(ctx))
		assert.Equal(t, map[string]int64{r1.Owner(): 3}, readersOf(stateOf(t, r1)))
		rDone := async(r2.RLock)

		for i := 0; i < 3; i++ {
			require.NoError(t, r1.RUnlock(ctx))
		}
		require.NoError(t, <-wDone, "the writer gets the lock when the readers leave")
		tok := w.Token()
		assert.Greater(t, tok, uint64(0), "the first write's token")
		select {
		case err := <-rDone:
			t.Fatalf("a reader got in under the writer: %v", err)
		default:
		}
		require.NoError(t, w.Unlock(ctx))
		require.NoError(t, <-rDone, "the waiting reader gets in after the writer")
		assert.Equal(t, tok, r2.RToken(), "the reader saw the writer's version")
		require.NoError(t, r2.RUnlock(ctx))
		assert.Equal(t, []string{"rc:{n}:fence"}, locktest.Keys(t, rdb))
	})
}

// The writer may read, then stop writing: a downgrade, even while another
// writer waits.
func TestDowngrade(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		c := locktest.NewClient(t, rdb)
		ctx := context.Background()
		w, r, w2 := rrwlock.New(c, "n"), rrwlock.New(c, "n"), rrwlock.New(c, "n")
		require.NoError(t, w.Lock(ctx))
		held, cancel := w.Context(ctx)
		defer cancel()
		require.NoError(t, w.RLock(held))
		assert.Equal(t, w.Token(), w.RToken(), "the writer reads its own version")
		assert.False(t, tryR(t, r), "written still")
		require.NoError(t, w.Unlock(ctx))
		st := stateOf(t, w)
		assert.Equal(t, rrwlock.Read, st.Mode)
		assert.Equal(t, map[string]int64{w.Owner(): 1}, readersOf(st))
		assert.True(t, tryR(t, r), "another reader joins after the downgrade")
		assert.False(t, tryW(t, w2), "no writer while the downgraded writer reads")
		require.NoError(t, r.RUnlock(ctx))
		require.NoError(t, w.RUnlock(ctx))

		require.NoError(t, w.Lock(ctx))
		w2Done := async(w2.Lock)
		locktest.Eventually(t, func() bool { return stateOf(t, w).WaitingWriters == 1 }, "w2 waits")
		assert.True(t, tryR(t, w), "the writer reads although a writer waits")
		require.NoError(t, w.Unlock(ctx))
		assert.False(t, tryR(t, r), "w2 waits: new readers wait too")
		st = stateOf(t, w)
		assert.Equal(t, rrwlock.Read, st.Mode, "w2 got the lock while the downgraded writer reads")
		assert.Equal(t, map[string]int64{w.Owner(): 1}, readersOf(st))
		assert.Equal(t, 1, st.WaitingWriters)
		require.NoError(t, w.RUnlock(ctx))
		require.NoError(t, <-w2Done)
		require.NoError(t, w2.Unlock(ctx))
		assert.Equal(t, []string{"rc:{n}:fence"}, locktest.Keys(t, rdb))
	})
}

// Every fresh write hold takes the next token, whichever way it was taken;
// a read hold reports the last write's, 0 before any write.
func TestTokens(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		c := locktest.NewClient(t, rdb)
		ctx := context.Background()
		r := rrwlock.New(c, "n")
		require.NoError(t, r.RLock(ctx))
		assert.Zero(t, r.RToken(), "no write yet")
		assert.Zero(t, stateOf(t, r).LastToken)
		require.NoError(t, r.RUnlock(ctx))

		ws := []*rrwlock.RWMutex{rrwlock.New(c, "n"), rrwlock.New(locktest.NewClient(t, rdb), "n")}
		var last uint64
		for i := 0; i < 9; i++ {
			w := ws[i%2]
			switch i % 3 {
			case 0:
				require.NoError(t, w.Lock(ctx))
			case 1:
				require.NoError(t, w.LockWithLease(ctx, time.Minute))
			case 2:
				require.True(t, tryW(t, w))
			}
			tok := w.Token()
			assert.Greater(t, tok, last, "a fresh write hold's token")
			last = tok
			st := stateOf(t, w)
			assert.Equal(t, tok, st.Writer.Token)
			assert.Equal(t, tok, st.LastToken)
			require.True(t, tryW(t, w))
			assert.Equal(t, tok, w.Token(), "re-entry keeps the token")
			require.NoError(t, w.Unlock(ctx))
			require.NoError(t, w.Unlock(ctx))
			assert.Zero(t, w.Token(), "no write hold, no token")

			require.NoError(t, r.RLock(ctx))
			assert.Equal(t, last, r.RToken(), "a reader sees the last write")
			assert.Equal(t, last, stateOf(t, r).LastToken)
			require.NoError(t, r.RUnlock(ctx))
			assert.Zero(t, r.RToken())
		}
	})
}

func TestState(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		c := locktest.NewClient(t, rdb)
		ctx := context.Background()
		w := rrwlock.New(c, "n")
		assert.Equal(t, rrwlock.State{}, stateOf(t, w))
		assert.Equal(t, "free", rrwlock.Free.String())

		require.NoError(t, w.LockWithLease(ctx, time.Minute))
		st := stateOf(t, w)
		assert.Equal(t, rrwlock.Write, st.Mode)
		assert.Equal(t, "write", st.Mode.String())
		h := st.Writer
		host, _ := os.Hostname()
		assert.Equal(t, w.Owner(), h.Owner)
		assert.Equal(t, c.ID(), h.Client)
		assert.Equal(t, host, h.Host)
		assert.Equal(t, os.Getpid(), h.PID)
		assert.Equal(t, int64(1), h.Count)
		tok := w.Token()
		assert.Greater(t, tok, uint64(0))
		assert.Equal(t, tok, h.Token)
		assert.True(t, h.Fixed)
		assert.Equal(t, time.Minute, h.Lease)
		assert.Greater(t, h.Remaining, time.Duration(0))
		assert.LessOrEqual(t, h.Remaining, time.Minute)
		assert.WithinDuration(t, time.Now(), h.AcquiredAt, time.Minute)
		assert.Empty(t, st.Readers)
		assert.Zero(t, st.WaitingWriters)
		assert.Equal(t, tok, st.LastToken)

		wctx, cancel := context.WithCancel(ctx)
		waits := make(chan error, 2)
		for i := 0; i < 2; i++ {
			m := rrwlock.New(c, "n")
			go func() { waits <- m.Lock(wctx) }()
		}
		locktest.Eventually(t, func() bool { return stateOf(t, w).WaitingWriters == 2 }, "two writers wait")
		cancel()
		for i := 0; i < 2; i++ {
			assert.ErrorIs(t, <-waits, context.Canceled)
		}
		assert.Zero(t, stateOf(t, w).WaitingWriters)

		held, cancelHeld := w.Context(ctx)
		defer cancelHeld()
		require.NoError(t, w.RLock(held))
		st = stateOf(t, w)
		assert.Equal(t, rrwlock.Write, st.Mode, "a writer that also reads")
		assert.Equal(t, map[string]int64{w.Owner(): 1}, readersOf(st))
		require.NoError(t, w.Unlock(ctx))
		st = stateOf(t, w)
		assert.Equal(t, rrwlock.Read, st.Mode)
		assert.Zero(t, st.Writer)
		assert.Equal(t, tok, st.LastToken)
		assert.Equal(t, tok, w.RToken(), "the downgraded reader reports the write's token")
		require.NoError(t, w.RUnlock(ctx))
	})
}

func stateOf(t *testing.T, m *rrwlock.RWMutex) rrwlock.State {
	t.Helper()
	st, err := m.State(context.Background())
	require.NoError(t, err)
	return st
}

// readersOf maps each reader's owner to its hold count.
func readersOf(st rrwlock.State) map[string]int64 {
	out := map[string]int64{}
	for _, r := range st.Readers {
		out[r.Owner] = r.Count
	}
	return out
}

func tryR(t *testing.T, m *rrwlock.RWMutex) bool {
	t.Helper()
	ctx, cancel := asHolder(context.Background(), m)
	defer cancel()
	ok, err := m.TryRLock(ctx)
	require.NoError(t, err)
	return ok
}

func tryW(t *testing.T, m *rrwlock.RWMutex) bool {
	t.Helper()
	ctx, cancel := asHolder(context.Background(), m)
	defer cancel()
	ok, err := m.TryLock(ctx)
	require.NoError(t, err)
	return ok
}

// asHolder returns ctx, or while m holds its write lock a context of that
// hold: what the holder's own re-entry, or downgrade, passes.
func asHolder(ctx context.Context, m *rrwlock.RWMutex) (context.Context, context.CancelFunc) {
	if m.Token() == 0 {
		return ctx, func() {}
	}
	return m.Context(ctx)
}

// async runs lock with a background context and returns where its error arrives.
func async(lock func(context.Context) error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- lock(context.Background()) }()
	return ch
}
