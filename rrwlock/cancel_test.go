package rrwlock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rrwlock"
)

// 16 handles in 4 processes (Clients), 300 random reads and writes each,
// holding for up to 200µs: a writer is never inside with a reader or another
// writer, no write is lost, readers see no write while they read, every
// write hold has a greater token than the last and every read hold reports
// the last write's, and readers really do share. (The counters are atomic
// only to keep the race detector quiet: it cannot see the ordering Redis
// provides.)
func TestExclusionUnderContention(t *testing.T) {
	const (
		procs   = 4
		workers = 16
	)
	ops := 300
	if testing.Short() {
		ops = 60
	}
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
		defer cancel()
		clients := make([]*redcoord.Client, procs)
		for i := range clients {
			clients[i] = locktest.NewClient(t, srv.Client(t))
		}
		var (
			readers, writers, most atomic.Int32
			lastToken              atomic.Uint64
			data, writes           atomic.Int64 // data: read and written apart, under the write lock
			wg                     sync.WaitGroup
		)
		errs := make(chan error, workers*ops)
		fail := func(format string, args ...any) { errs <- fmt.Errorf(format, args...) }
		pause := func(rng *rand.Rand) { time.Sleep(time.Duration(rng.Int64N(int64(200 * time.Microsecond)))) }
		writing := func(m *rrwlock.RWMutex, rng *rand.Rand) {
			if n := writers.Add(1); n != 1 || readers.Load() != 0 {
				fail("a writer inside with %d writers and %d readers", n, readers.Load())
			}
			if tok := m.Token(); tok <= lastToken.Load() {
				fail("write token %d after %d", tok, lastToken.Load())
			}
			lastToken.Store(m.Token())
			v := data.Load()
			pause(rng)
			data.Store(v + 1)
			writes.Add(1)
			writers.Add(-1)
		}
		reading := func(m *rrwlock.RWMutex, rng *rand.Rand) {
			n := readers.Add(1)
			if writers.Load() != 0 {
				fail("a reader inside with a writer")
			}
			for cur := most.Load(); n > cur && !most.CompareAndSwap(cur, n); cur = most.Load() {
			}
			if m.RToken() != lastToken.Load() {
				fail("a reader saw token %d, the last write's is %d", m.RToken(), lastToken.Load())
			}
			v := data.Load()
			pause(rng)
			if data.Load() != v {
				fail("data changed under a reader")
			}
			readers.Add(-1)
		}
		for w := 0; w < workers; w++ {
			m := rrwlock.New(clients[w%procs], "rw")
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), 1))
				for k := 0; k < ops; k++ {
					lock, try, unlock, inside := m.RLock, m.TryRLock, m.RUnlock, reading
					if write := rng.IntN(4) == 0; write {
						lock, try, unlock, inside = m.Lock, m.TryLock, m.Unlock, writing
					}
					ok, err := true, error(nil)
					if rng.IntN(8) == 0 {
						ok, err = try(ctx)
					} else {
						err = lock(ctx)
					}
					if err != nil {
						fail("acquire: %w", err)
						return
					}
					if !ok {
						continue
					}
					inside(m, rng)
					if err := unlock(ctx); err != nil {
						fail("release: %w", err)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		t.Logf("%d writes; up to %d readers at once", writes.Load(), most.Load())
		assert.Equal(t, writes.Load(), data.Load(), "lost writes")
		assert.Greater(t, writes.Load(), int64(0))
		assert.Greater(t, most.Load(), int32(1), "readers never shared: the test proves little")
		assert.Equal(t, []string{"rc:{rw}:fence"}, locktest.Keys(t, srv.Client(t)))
	})
}

// TestWriterNotStarvedByReaders (liveness_test.go) on a real redis-server,
// in real time: among 32 readers re-acquiring without pause, a writer gets
// in, ten times over (the context's timeout is a hang guard, not a timing
// assertion).
func TestWriterNotStarvedOnRedisServer(t *testing.T) {
	srv := redistest.Real(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var clients []*redcoord.Client
	for i := 0; i < 4; i++ {
		clients = append(clients, locktest.NewClient(t, srv.Client(t)))
	}
	s := startReaders(ctx, clients, "n", 32, time.Millisecond)
	defer func() { s.stop.Store(true); s.wg.Wait() }() // if a check below fails
	time.Sleep(20 * time.Millisecond)
	w := rrwlock.New(clients[0], "n")
	var longest time.Duration
	for i := 0; i < 10; i++ {
		longest = max(longest, s.write(ctx, t, w, time.Millisecond))
	}
	s.end(t)
	t.Logf("the writer waited up to %v; up to %d readers at once", longest, s.most.Load())
	assert.Equal(t, []string{"rc:{n}:fence"}, locktest.Keys(t, srv.Client(t)))
}

// 400 RLock and Lock waits ended by their contexts at random moments (before
// the first try, while waiting, as a hand-off races in), while another
// handle holds the write lock or a read lock: afterwards no waiting writer
// is left to hold readers back, no key but the lock's own, no subscription
// in the Hubs or the server.
func TestCancelledWaitsLeaveNothing(t *testing.T) {
	const (
		procs     = 4
		workers   = 16
		cancelled = 400
	)
	for _, held := range []string{"write", "read"} {
		t.Run(held, func(t *testing.T) {
			redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
				ctx := context.Background()
				rdb := srv.Client(t)
				clients := make([]*redcoord.Client, procs)
				for i := range clients {
					clients[i] = locktest.NewClient(t, srv.Client(t))
				}
				blocker := rrwlock.New(clients[0], "cancel")
				lock, unlock, keys := blocker.Lock, blocker.Unlock, []string{"rc:{cancel}:fence", "rc:{cancel}:lock"}
				if held == "read" {
					lock, unlock, keys = blocker.RLock, blocker.RUnlock, []string{"rc:{cancel}:leases", "rc:{cancel}:readers"}
				}
				require.NoError(t, lock(ctx))

				var (
					gaveUp, got atomic.Int32
					wg          sync.WaitGroup
				)
				errs := make(chan error, workers)
				for w := 0; w < workers; w++ {
					m := rrwlock.New(clients[w%procs], "cancel")
					wg.Add(1)
					go func() {
						defer wg.Done()
						rng := rand.New(rand.NewPCG(uint64(w), 2))
						for k := 0; k < 10*cancelled && gaveUp.Load() < cancelled; k++ {
							write := rng.IntN(2) == 0
							wctx, cancel := context.WithTimeout(ctx, time.Duration(rng.Int64N(int64(10*time.Millisecond))))
							if rng.IntN(4) == 0 {
								cancel() // before the first try
							}
							var err error
							if write {
								err = m.Lock(wctx)
							} else {
								err = m.RLock(wctx)
							}
							cancel()
							switch {
							case err == nil && (write || held == "write"):
								errs <- fmt.Errorf("got the lock (write: %v) while it is held for %s", write, held)
								return
							case err == nil:
								got.Add(1)
								if err := m.RUnlock(ctx); err != nil {
									errs <- err
									return
								}
							case errors.Is(err, redcoord.ErrNotAcquired) &&
								(errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
								gaveUp.Add(1)
							default:
								errs <- err
								return
							}
						}
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					require.NoError(t, err)
				}
				t.Logf("%d waits ended by their contexts, %d reads got in", gaveUp.Load(), got.Load())
				require.GreaterOrEqual(t, gaveUp.Load(), int32(cancelled))

				assert.ElementsMatch(t, keys, locktest.Keys(t, rdb), "no waiting writer, nothing but the lock's own keys")
				assert.Zero(t, stateOf(t, blocker).WaitingWriters)
				for _, c := range clients {
					hub, err := c.Hub()
					require.NoError(t, err)
					locktest.Eventually(t, func() bool { st := hub.Stats(); return st.Waiters == 0 && st.Channels == 0 }, "Hub empty")
				}
				locktest.Eventually(t, func() bool { return len(rdb.PubSubChannels(ctx, "rc:{*").Val()) == 0 }, "PUBSUB CHANNELS empty")
				fresh := rrwlock.New(clients[1], "cancel")
				assert.Equal(t, held == "read", tryR(t, fresh), "a fresh reader gets in exactly when it is held for reading")
				if held == "read" {
					require.NoError(t, fresh.RUnlock(ctx))
				}
				require.NoError(t, unlock(ctx))
				assert.True(t, tryW(t, fresh), "free, and no writer waits")
				require.NoError(t, fresh.Unlock(ctx))
				assert.Equal(t, []string{"rc:{cancel}:fence"}, locktest.Keys(t, rdb))
			})
		})
	}
}

// ForceUnlock ends every hold, whoever holds it; a waiting writer keeps
// waiting and gets the lock.
func TestForceUnlock(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		fast := locktest.NewClient(t, rdb, redcoord.WithLeaseTTL(time.Second)) // renewals every 333ms find holds gone
		admin := rrwlock.New(locktest.NewClient(t, rdb), "n")
		ctx := context.Background()
		force := func(m *rrwlock.RWMutex) bool {
			ok, err := m.ForceUnlock(ctx)
			require.NoError(t, err)
			return ok
		}

		w := rrwlock.New(fast, "n")
		require.NoError(t, w.Lock(ctx))
		lost := w.Lost()
		assert.True(t, force(admin))
		assert.Equal(t, rrwlock.Free, stateOf(t, admin).Mode)
		locktest.Eventually(t, func() bool { return locktest.IsClosed(lost) }, "the writer's Lost closed")
		assert.ErrorIs(t, w.Unlock(ctx), redcoord.ErrNotHeld)

		rs := []*rrwlock.RWMutex{rrwlock.New(fast, "n"), rrwlock.New(fast, "n")}
		for _, r := range rs {
			require.NoError(t, r.RLock(ctx))
		}
		rlost := []<-chan struct{}{rs[0].RLost(), rs[1].RLost()}
		wDone := async(w.Lock)
		locktest.Eventually(t, func() bool { return stateOf(t, admin).WaitingWriters == 1 }, "the writer waits")
		assert.True(t, force(admin))
		require.NoError(t, <-wDone, "the waiting writer gets the forced lock")
		for i, r := range rs {
			locktest.Eventually(t, func() bool { return locktest.IsClosed(rlost[i]) }, "a reader's RLost closed")
			assert.ErrorIs(t, r.RUnlock(ctx), redcoord.ErrNotHeld)
		}
		st := stateOf(t, admin)
		assert.Equal(t, rrwlock.Write, st.Mode)
		assert.Equal(t, w.Owner(), st.Writer.Owner)
		assert.Empty(t, st.Readers)
		assert.Zero(t, st.WaitingWriters)

		held, cancel := w.Context(ctx)
		defer cancel()
		require.NoError(t, w.RLock(held)) // write and read: a handle forcing its own holds loses both at once
		wl, rl := w.Lost(), w.RLost()
		assert.True(t, force(w))
		assert.True(t, locktest.IsClosed(wl), "Lost")
		assert.True(t, locktest.IsClosed(rl), "RLost")
		assert.Zero(t, w.Token())
		assert.Zero(t, w.RToken())
		assert.ErrorIs(t, w.Unlock(ctx), redcoord.ErrNotHeld)
		assert.ErrorIs(t, w.RUnlock(ctx), redcoord.ErrNotHeld)
		assert.False(t, force(admin), "already free")
		assert.Equal(t, []string{"rc:{n}:fence"}, locktest.Keys(t, rdb))
	})
}
