package rsemaphore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
)

// The history of a counting semaphore: which goroutine took or gave back
// how many permits.

const (
	linTotal   = 5  // the semaphore's permits
	linMaxHeld = 32 // goroutines a history may have
)

type linInput struct {
	who  int  // the goroutine
	take bool // an Acquire or TryAcquire that took n; false: a Release of n
	try  bool // a TryAcquire
	n    int
}

// linState is the permits each goroutine holds; comparable, so Porcupine's
// default equality applies.
type linState [linMaxHeld]uint8

func (s linState) sum() (n int) {
	for _, k := range s {
		n += int(k)
	}
	return n
}

func linStep(state, input, _ any) (bool, any) {
	s, in := state.(linState), input.(linInput)
	if in.take {
		if s.sum()+in.n > linTotal {
			return false, s
		}
		s[in.who] += uint8(in.n)
		return true, s
	}
	if int(s[in.who]) < in.n {
		return false, s
	}
	s[in.who] -= uint8(in.n)
	return true, s
}

// linModel is the sequential specification of a counting semaphore of
// linTotal permits whose holders give back only what they took: a take of
// n fits in what is free, a release returns n its caller holds.
var linModel = porcupine.Model{
	Init: func() any { return linState{} },
	Step: linStep,
	Hash: func(state any) uint64 {
		var h uint64 = 14695981039346656037
		for _, k := range state.(linState) {
			h = (h ^ uint64(k)) * 1099511628211
		}
		return h
	},
	DescribeOperation: func(input, _ any) string {
		in := input.(linInput)
		switch {
		case !in.take:
			return fmt.Sprintf("g%d Release(%d)", in.who, in.n)
		case in.try:
			return fmt.Sprintf("g%d TryAcquire(%d) -> ok", in.who, in.n)
		}
		return fmt.Sprintf("g%d Acquire(%d) -> ok", in.who, in.n)
	},
	DescribeState: func(state any) string {
		s := state.(linState)
		return fmt.Sprintf("%d of %d held %v", s.sum(), linTotal, s[:])
	},
}

// TestLinearizability records histories of 24 goroutines, each with its own
// handle, spread over 4 Clients, doing 250 random operations each on one
// counting semaphore of 5 permits: Acquire (waiting 1 to 20ms) or
// TryAcquire of 1 to 3 permits, Release of some of what the goroutine
// holds. Meanwhile the replies of a random 15% of sem_acquire and
// sem_release commands are dropped after Redis ran them, so go-redis sends
// them again on a new connection, and every reply of 4% of the acquire
// requests is dropped, so the call fails after go-redis's last retry and
// the wait loop's leave script gives back what the request took. Each
// history is checked against linModel, on miniredis and on a
// redis-server; then the semaphore must have all of its permits back.
//
// What the history leaves out, and why:
//
//   - An acquire that failed (it timed out, or its replies were dropped) is
//     a no-op in the model, which can be linearized anywhere, so it is left
//     out. It is not quite nothing in Redis: a request whose reply was lost
//     may have taken permits, held them for a while, and given them back by
//     its leave script.
//   - For that reason a busy TryAcquire is left out too: it may have found
//     permits held by such a request, which the model never saw held, so it
//     proves nothing about the holds the model knows; kept in, as "a take
//     of n did not fit", it would fail correct histories.
//   - Available is not read during the run, for the same reason: it counts
//     those transient holds. It is read once, after the run, when every
//     request has ended.
//   - Every operation kept is checked over the round trip of the last
//     script it sent (see locktest.Spans), go-redis's retries included, not over
//     its whole call: a blocking Acquire took its permits in its last try.
//     A narrower interval only adds constraints, and keeps the search small.
//
// So the check shows that holders were never let in beyond the total, that
// a retried release did not return permits twice (which would let holders
// in beyond it later), and, with the count after the run, that a retried or
// given-up acquire did not keep permits.
//
// miniredis sorts a whole sorted set for each ZREMRANGEBYSCORE, which every
// script runs on the request markers, so its histories are shorter: 16
// goroutines, 100 operations each.
func TestLinearizability(t *testing.T) {
	t.Run("model", testLinModel)
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		linCheck(t, srv, &linCounting{})
	})
}

// TestLinearizabilityExpirable is TestLinearizability on an
// ExpirableSemaphore of 5 permits, each acquire and release one permit,
// half of them with a fixed lease of an hour and half kept by the
// watchdog, none ending during the run; xsem_acquire's and xsem_release's
// replies are dropped. The same model applies, with the same exclusions.
func TestLinearizabilityExpirable(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		linCheck(t, srv, &linExpirable{})
	})
}

// linSubject is a semaphore a history is recorded on.
type linSubject interface {
	scripts() (acquire, release string) // whose replies are dropped
	maxN() int                          // the most permits an operation takes or gives
	// open makes a handle per goroutine, sets the permits to linTotal and
	// takes and gives back one, so that the scripts are loaded.
	open(t *testing.T, ctx context.Context, clients []*redcoord.Client, goroutines int)
	apply(ctx context.Context, in linInput, rng *rand.Rand) (bool, error)
	available(ctx context.Context) (int64, error)
}

// linCheck records a history on subject with replies dropped, checks it
// against linModel, and checks that every permit came back.
func linCheck(t *testing.T, srv *redistest.Server, subject linSubject) {
	procs, goroutines, perG := 4, 24, 250
	if !srv.Real {
		goroutines, perG = 16, 100
	}
	if testing.Short() {
		t.Skip("thousands of operations")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	faults := redistest.NewFaults()
	acquireScript, releaseScript := subject.scripts()
	drop := newLinDropper(faults, seed, acquireScript, releaseScript)
	defer drop.stop()
	start := time.Now()
	clients := make([]*redcoord.Client, procs)
	for i := range clients {
		rdb := srv.Client(t, func(o *redis.Options) {
			o.Dialer = faults.Dialer(nil)
			o.PoolSize = 2 * goroutines / procs
			o.MinRetryBackoff, o.MaxRetryBackoff = time.Millisecond, 2*time.Millisecond
		})
		rdb.AddHook(locktest.Spans{Start: start})
		clients[i] = locktest.NewClient(t, rdb)
	}
	subject.open(t, ctx, clients, goroutines)
	drop.start()

	t0 := time.Now()
	var out linOutcomes
	ops := linRecord(ctx, t, subject, goroutines, perG, seed, &out)
	drop.stop()
	acquires, releases := drop.counts()
	t.Logf("%d goroutines, %d operations in %v: %s; %d checked", goroutines, goroutines*perG, time.Since(t0).Round(time.Millisecond), &out, len(ops))
	t.Logf("%d replies dropped: %d of %s, %d of %s", faults.Fired(), acquires, acquireScript, releases, releaseScript)
	assert.Positive(t, faults.Fired(), "no reply was dropped: the test proves little")
	assert.Positive(t, releases, "no release was retried")
	assert.Positive(t, out.failed.Load(), "no acquire failed: the leave after lost replies was not tried")

	t0 = time.Now()
	res, info := porcupine.CheckOperationsVerbose(linModel, ops, time.Minute)
	t.Logf("checked in %v: %s", time.Since(t0).Round(time.Millisecond), res)
	if res != porcupine.Ok {
		path := filepath.Join(t.ArtifactDir(), "linearizability.html")
		if err := porcupine.VisualizePath(linModel, info, path); err != nil {
			t.Logf("visualize: %v", err)
		}
		t.Fatalf("history %s (seed %d); visualization (kept with -artifacts): %s", res, seed, path)
	}
	n, err := subject.available(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(linTotal), n, "permits leaked")
}

// linOutcomes counts how the operations of a history ended.
type linOutcomes struct {
	ok, busy, timedOut, failed atomic.Int64
}

func (o *linOutcomes) String() string {
	return fmt.Sprintf("%d took effect, %d busy, %d timed out, %d failed", o.ok.Load(), o.busy.Load(), o.timedOut.Load(), o.failed.Load())
}

// linRecord runs perG random operations in each goroutine, then gives back
// what each holds, and returns the history to check: the operations that
// took effect, each over the round trip of its last script.
func linRecord(ctx context.Context, t *testing.T, subject linSubject, goroutines, perG int, seed uint64, out *linOutcomes) []porcupine.Operation {
	var (
		mu   sync.Mutex
		ops  []porcupine.Operation
		errs []error
		wg   sync.WaitGroup
	)
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			held := 0
			var mine []porcupine.Operation
			do := func(k int, in linInput) error {
				sp := &locktest.Span{}
				ok, err := subject.apply(locktest.WithSpan(ctx, sp), in, rng)
				switch {
				case err != nil && in.take && errors.Is(err, io.EOF):
					out.failed.Add(1) // every reply dropped: a no-op
					return nil
				case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
					out.timedOut.Add(1) // a no-op
					return nil
				case err != nil:
					return fmt.Errorf("goroutine %d, operation %d, %s: %w", g, k, linModel.DescribeOperation(in, nil), err)
				case !ok:
					out.busy.Add(1) // a no-op
					return nil
				}
				out.ok.Add(1)
				call, ret := sp.Get()
				if ret == 0 {
					return fmt.Errorf("goroutine %d, operation %d: no script sent", g, k)
				}
				mine = append(mine, porcupine.Operation{ClientId: g, Input: in, Call: call, Return: ret})
				if in.take {
					held += in.n
				} else {
					held -= in.n
				}
				return nil
			}
			var err error
			for k := 0; k < perG && err == nil; k++ {
				err = do(k, linChoose(rng, g, held, subject.maxN()))
			}
			for k := perG; held > 0 && err == nil; k++ {
				err = do(k, linInput{who: g, n: min(held, subject.maxN())})
			}
			mu.Lock()
			defer mu.Unlock()
			ops = append(ops, mine...)
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	return ops
}

// linChoose picks a goroutine's next operation from what it holds: two
// times in three, when it holds some, a release of some of them; otherwise
// an acquire of 1 to maxN that it could hold with what it has.
func linChoose(rng *rand.Rand, g, held, maxN int) linInput {
	if held > 0 && (held == linTotal || rng.IntN(3) > 0) {
		return linInput{who: g, n: 1 + rng.IntN(min(held, maxN))}
	}
	return linInput{who: g, take: true, try: rng.IntN(5) < 2, n: 1 + rng.IntN(min(maxN, linTotal-held))}
}

// testLinModel shows that the checker can fail: hand-made histories that
// no correct semaphore produces are rejected, and a legal one is accepted.
func testLinModel(t *testing.T) {
	op := func(who int, take bool, n int, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: who, Input: linInput{who: who, take: take, n: n}, Call: call, Return: ret}
	}
	t.Run("more held than the total", func(t *testing.T) {
		require.False(t, porcupine.CheckOperations(linModel, []porcupine.Operation{
			op(0, true, 3, 0, 10),
			op(1, true, 3, 20, 30), // before 0 released
			op(0, false, 3, 40, 50),
			op(1, false, 3, 60, 70),
		}))
	})
	t.Run("a release counted twice", func(t *testing.T) {
		require.False(t, porcupine.CheckOperations(linModel, []porcupine.Operation{
			op(0, true, 3, 0, 10),
			op(1, true, 2, 0, 10),
			op(0, false, 3, 20, 30),
			op(2, true, 3, 40, 50),
			op(3, true, 3, 60, 70), // only 3 were free
		}))
	})
	t.Run("more released than held", func(t *testing.T) {
		require.False(t, porcupine.CheckOperations(linModel, []porcupine.Operation{
			op(0, true, 1, 0, 10),
			op(0, false, 2, 20, 30),
		}))
	})
	t.Run("legal", func(t *testing.T) {
		require.True(t, porcupine.CheckOperations(linModel, []porcupine.Operation{
			op(0, true, 3, 0, 10),
			op(1, true, 2, 5, 15),
			op(2, true, 3, 12, 45), // overlaps 0's release: linearized after it
			op(0, false, 3, 20, 30),
			op(1, false, 1, 50, 60),
			op(3, true, 1, 55, 58),
			op(1, false, 1, 61, 62),
			op(2, false, 3, 63, 64),
			op(3, false, 1, 65, 70),
		}))
	})
}
