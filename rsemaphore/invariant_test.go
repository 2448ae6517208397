package rsemaphore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rsemaphore"
)

// 64 handles in 4 processes (Clients), each acquiring and releasing a
// random 1 to 3 of 5 permits, 1,000 times, on redis-server: the permits held
// at once, counted by the holders themselves, never exceed 5, and once
// every handle is done all 5 are available again, nobody is queued and no
// Hub has a waiter left. Holders do not sleep: they count, yield, and
// release, so that the round trips (about 128,000 fair, four times as many
// unfair, where a release wakes a waiter in every process and all but one
// try in vain) fit the package's time budget under -race: about 15 s and
// 19 s on a quiet 2-core machine. miniredis runs Lua far slower: there
// both modes run 8 handles in 4 processes, 40 rounds each.
//
// The poll interval is ten minutes, longer than the hang guard: a wake-up
// lost by the protocol (as opposed to by the network, which does not fail
// here) would strand its waiter until the guard's deadline fails the test.
func TestPermitsNeverExceeded(t *testing.T) {
	for _, fair := range []bool{false, true} {
		t.Run(semMode(fair), func(t *testing.T) {
			t.Run(redistest.ServerName(t), func(t *testing.T) {
				if testing.Short() { // a tenth of the rounds
					hammer(t, redistest.Real(t), fair, 4, 64, 100)
					return
				}
				hammer(t, redistest.Real(t), fair, 4, 64, 1000)
			})
			t.Run("miniredis", func(t *testing.T) {
				hammer(t, redistest.Mini(t), fair, 4, 8, 40)
			})
		})
	}
}

// hammer runs workers handles spread over procs Clients, rounds acquire
// and release pairs each, against a semaphore of 5 permits, and checks the
// invariant and the state it leaves.
func hammer(t *testing.T, srv *redistest.Server, fair bool, procs, workers, rounds int) {
	const permits = 5
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a hang guard
	defer cancel()
	var opts []rsemaphore.Option
	if fair {
		opts = append(opts, rsemaphore.WithFair())
	}
	opts = append(opts, rsemaphore.WithMaxPollInterval(10*time.Minute))
	clients := make([]*redcoord.Client, procs)
	for i := range clients {
		clients[i] = locktest.NewClient(t, srv.Client(t))
	}
	admin := rsemaphore.New(clients[0], "pool")
	ok, err := admin.TrySetPermits(ctx, permits)
	require.NoError(t, err)
	require.True(t, ok)

	var (
		held, peak, violations atomic.Int64
		acquired               atomic.Int64
		wg                     sync.WaitGroup
	)
	errs := make(chan error, workers)
	start := time.Now()
	for w := 0; w < workers; w++ {
		s := rsemaphore.New(clients[w%procs], "pool", opts...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for k := 0; k < rounds; k++ {
				n := 1 + rng.Int64N(3)
				if err := s.Acquire(ctx, n); err != nil {
					errs <- fmt.Errorf("worker %d, round %d: acquire %d: %w", w, k, n, err)
					return
				}
				v := held.Add(n)
				if v > permits {
					violations.Add(1)
				}
				for p := peak.Load(); v > p && !peak.CompareAndSwap(p, v); p = peak.Load() {
				}
				acquired.Add(1)
				runtime.Gosched()
				held.Add(-n) // before the permits are back, so that the count never lags behind Redis
				if err := s.Release(ctx, n); err != nil {
					errs <- fmt.Errorf("worker %d, round %d: release %d: %w", w, k, n, err)
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
	t.Logf("%d acquisitions by %d handles in %d processes in %v; up to %d permits held at once",
		acquired.Load(), workers, procs, time.Since(start).Round(time.Millisecond), peak.Load())
	assert.Zero(t, violations.Load(), "more than %d permits held at once", permits)
	assert.Equal(t, int64(workers*rounds), acquired.Load())
	assert.Greater(t, peak.Load(), int64(3), "holders never overlapped: the test proves little")

	st, err := admin.State(ctx)
	require.NoError(t, err)
	assert.Equal(t, rsemaphore.State{Set: true, Available: permits, Total: permits}, st)
	assert.Subset(t, []string{"rc:{pool}:permits", "rc:{pool}:done"}, locktest.Keys(t, srv.Client(t)),
		"no queue left behind")
	for _, c := range clients {
		hub, err := c.Hub()
		require.NoError(t, err)
		locktest.Eventually(t, func() bool { st := hub.Stats(); return st.Waiters == 0 && st.Channels == 0 }, "Hub empty")
	}
}
