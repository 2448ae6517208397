package rrwlock_test

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rrwlock"
)

// The operations of a history, their outcomes, and the lock they act on.

type linOp uint8

const (
	linTryRLock linOp = iota
	linTryLock
	linRLock // blocking, with a short timeout
	linLock
	linRUnlock
	linUnlock
)

var linOpNames = [...]string{"TryRLock", "TryLock", "RLock", "Lock", "RUnlock", "Unlock"}

type linInput struct {
	handle int
	op     linOp
}

type linOutput uint8

const (
	linOK      linOutput = iota // acquired, or released
	linBusy                     // not acquired
	linNotHeld                  // ErrNotHeld (and not ErrLeaseLost) from a release
	linUpgrade                  // ErrUpgrade from Lock or TryLock by a reader
)

var linOutNames = [...]string{"ok", "busy", "not held", "upgrade refused"}

// linState is comparable, so Porcupine's default equality applies.
type linState struct {
	writer  int    // handle, -1: none
	readers uint32 // bit i: handle i holds a read hold
}

func linStep(state, input, output any) (bool, any) {
	s, in, out := state.(linState), input.(linInput), output.(linOutput)
	me := uint32(1) << in.handle
	switch in.op {
	case linTryRLock, linRLock:
		switch out {
		case linBusy:
			return true, s
		case linOK:
			if (s.writer == -1 || s.writer == in.handle) && s.readers&me == 0 {
				s.readers |= me
				return true, s
			}
		}
	case linTryLock, linLock:
		switch out {
		case linBusy:
			return in.op == linLock || (s.writer != -1 && s.writer != in.handle) || s.readers&^me != 0, s
		case linOK:
			if s.writer == -1 && s.readers == 0 {
				s.writer = in.handle
				return true, s
			}
		case linUpgrade:
			return s.readers&me != 0 && s.writer != in.handle, s
		}
	case linRUnlock:
		switch out {
		case linOK:
			if s.readers&me != 0 {
				s.readers &^= me
				return true, s
			}
		case linNotHeld:
			return s.readers&me == 0, s
		}
	case linUnlock:
		switch out {
		case linOK:
			if s.writer == in.handle {
				s.writer = -1
				return true, s
			}
		case linNotHeld:
			return s.writer != in.handle, s
		}
	}
	return false, s
}

// linModel is the sequential specification of a read-write lock without
// re-entry, for Porcupine. A handle holds at most one hold of each kind; the
// writer may also take a read hold (a downgrade). An acquire that acquired
// must be compatible with the holds. One that did not changes nothing, and is
// always allowed for a blocking RLock or Lock that timed out and for a busy
// TryRLock: a waiting writer, which the model does not track, holds readers
// back, and a grant that raced a timeout is undone before the call returns.
// TryLock is held back by holds alone, so a busy TryLock requires one.
var linModel = porcupine.Model{
	Init: func() any { return linState{writer: -1} },
	Step: linStep,
	Hash: func(state any) uint64 {
		s := state.(linState)
		return uint64(s.writer+1)<<32 | uint64(s.readers)
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(linInput), output.(linOutput)
		return fmt.Sprintf("h%d %s -> %s", in.handle, linOpNames[in.op], linOutNames[out])
	},
	DescribeState: func(state any) string {
		s := state.(linState)
		return fmt.Sprintf("writer %d, %d readers %032b", s.writer, bits.OnesCount32(s.readers), s.readers)
	},
}

// TestLinearizability records histories of 32 handles doing 500 random
// operations each on one name, spread over 4 Clients (so releases notify
// waiters in other processes as well as in their own), and checks each, as
// one history of 16,000 operations, against linModel: on miniredis and on a
// redis-server.
//
// Two things keep Porcupine's search small; neither can turn a history that
// is not linearizable into one that is:
//
//   - An acquire that did not acquire and is always allowed (a busy TryRLock,
//     a blocking RLock or Lock that timed out) changes nothing, so it can be
//     linearized anywhere and is left out of the checked history. Kept in,
//     the k of them pending at once (up to 20ms each) made the checker try
//     2^k orders at every step back: over a minute, or a timeout.
//   - Every other operation is checked over the round trip of the last
//     script it sent (see locktest.Spans), not over its whole call: a blocking
//     RLock that waited 10ms took effect in its last try. A narrower interval
//     only adds constraints. Without it, 15 readers woken together after
//     10ms of waiting made 2^15 orders to try around each fast operation of
//     another handle meanwhile.
//
// So checked, a history takes well under a second.
func TestLinearizability(t *testing.T) {
	t.Run("model", testLinModel)
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		const (
			procs   = 4
			handles = 32
			perH    = 500
		)
		if testing.Short() {
			t.Skip("16,000 operations")
		}
		start := time.Now()
		clients := make([]*redcoord.Client, procs)
		for i := range clients {
			rdb := s.Client(t, func(o *redis.Options) { o.PoolSize = 2 * handles / procs })
			rdb.AddHook(locktest.Spans{Start: start})
			clients[i] = locktest.NewClient(t, rdb)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		ms := make([]*rrwlock.RWMutex, handles)
		for i := range ms {
			ms[i] = rrwlock.New(clients[i%procs], "linear")
		}
		// A history the checker cannot decide within its minute (Unknown:
		// on a loaded machine the round trips, and so the operations'
		// overlaps, widen) is replaced by a fresh one, once; an Illegal
		// one fails at once.
		for try := 1; ; try++ {
			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed)
			t0 := time.Now()
			ops := linRecord(ctx, t, ms, perH, seed, start)
			t.Logf("%d operations in %v, %d checked", handles*perH, time.Since(t0).Round(time.Millisecond), len(ops))

			t0 = time.Now()
			res, info := porcupine.CheckOperationsVerbose(linModel, ops, time.Minute)
			t.Logf("checked in %v: %s", time.Since(t0).Round(time.Millisecond), res)
			if res == porcupine.Ok {
				break
			}
			if res == porcupine.Unknown && try < 2 {
				continue
			}
			path := filepath.Join(t.ArtifactDir(), "linearizability.html")
			if err := porcupine.VisualizePath(linModel, info, path); err != nil {
				t.Logf("visualize: %v", err)
			}
			t.Fatalf("history %s (seed %d); visualization (kept with -artifacts): %s", res, seed, path)
		}

		st, err := ms[0].State(ctx)
		require.NoError(t, err)
		require.Equal(t, rrwlock.Free, st.Mode, "every hold was released")
		require.Zero(t, st.WaitingWriters)
		require.Equal(t, []string{"rc:{linear}:fence"}, locktest.Keys(t, s.Client(t)))
	})
}

// linRecord runs perH random operations on each handle at once, then releases
// what each still holds, and returns the history to check: every operation
// but the always-allowed ones, over the round trip of its last script.
func linRecord(ctx context.Context, t *testing.T, ms []*rrwlock.RWMutex, perH int, seed uint64, start time.Time) []porcupine.Operation {
	var (
		mu   sync.Mutex
		ops  []porcupine.Operation
		errs []error
		wg   sync.WaitGroup
	)
	for h := range ms {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(h)))
			var r, w bool // the holds of this handle
			var mine []porcupine.Operation
			do := func(k int, op linOp) error {
				sp := &locktest.Span{}
				call := time.Since(start).Nanoseconds()
				out, err := linApply(locktest.WithSpan(ctx, sp), ms[h], op, rng)
				ret := time.Since(start).Nanoseconds()
				if err != nil {
					return fmt.Errorf("handle %d, operation %d, %s: %w", h, k, linOpNames[op], err)
				}
				if out == linBusy && op != linTryLock {
					return nil // always allowed, and changes nothing
				}
				if out != linUpgrade { // an upgrade's last script is its leave
					if call, ret = sp.Get(); ret == 0 && out == linNotHeld {
						return nil // answered by the handle, which held nothing: changes nothing
					}
					if ret == 0 {
						return fmt.Errorf("handle %d, operation %d, %s: no script sent", h, k, linOpNames[op])
					}
				}
				mine = append(mine, porcupine.Operation{ClientId: h, Input: linInput{h, op}, Call: call, Output: out, Return: ret})
				if out == linOK {
					switch op {
					case linTryRLock, linRLock:
						r = true
					case linTryLock, linLock:
						w = true
					case linRUnlock:
						r = false
					case linUnlock:
						w = false
					}
				}
				return nil
			}
			var err error
			for k := 0; k < perH && err == nil; k++ {
				err = do(k, linChoose(rng, r, w))
			}
			if err == nil && w {
				err = do(perH, linUnlock)
			}
			if err == nil && r {
				err = do(perH+1, linRUnlock)
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

// linChoose picks a handle's next operation from what it holds: mostly a
// release when it holds something, and otherwise an acquire of a hold it
// lacks; now and then a release of a hold it lacks, or an upgrade.
func linChoose(rng *rand.Rand, r, w bool) linOp {
	switch p := rng.IntN(100); {
	case p < 3: // a release of a hold the handle lacks
		if !r {
			return linRUnlock
		}
		if !w {
			return linUnlock
		}
	case p < 6 && r && !w: // an upgrade, refused
		return [...]linOp{linTryLock, linLock}[rng.IntN(2)]
	case p < 60 && (r || w): // a release
		if r && (!w || rng.IntN(2) == 0) {
			return linRUnlock
		}
		return linUnlock
	}
	switch {
	case w && !r: // a downgrade
		return [...]linOp{linTryRLock, linRLock}[rng.IntN(2)]
	case r && w:
		return [...]linOp{linRUnlock, linUnlock}[rng.IntN(2)]
	case r:
		return linRUnlock
	}
	return [...]linOp{linTryRLock, linTryRLock, linRLock, linRLock, linRLock, linTryLock, linLock, linLock}[rng.IntN(8)]
}

// linApply runs op on m and classifies the result; an error is any other result.
// A blocking acquire waits at most 1 to 20ms.
func linApply(ctx context.Context, m *rrwlock.RWMutex, op linOp, rng *rand.Rand) (linOutput, error) {
	var (
		ok  bool
		err error
	)
	ctx, cancelHeld := asHolder(ctx, m) // a holder re-enters through its hold's Context
	defer cancelHeld()
	switch op {
	case linTryRLock:
		ok, err = m.TryRLock(ctx)
	case linTryLock:
		ok, err = m.TryLock(ctx)
	case linRLock, linLock:
		wctx, cancel := context.WithTimeout(ctx, time.Duration(1+rng.IntN(20))*time.Millisecond)
		if op == linRLock {
			err = m.RLock(wctx)
		} else {
			err = m.Lock(wctx)
		}
		cancel()
		ok = err == nil
		if errors.Is(err, redcoord.ErrNotAcquired) && errors.Is(err, context.DeadlineExceeded) {
			err = nil
		}
	case linRUnlock, linUnlock:
		if op == linRUnlock {
			err = m.RUnlock(ctx)
		} else {
			err = m.Unlock(ctx)
		}
		if errors.Is(err, redcoord.ErrNotHeld) && !errors.Is(err, redcoord.ErrLeaseLost) {
			return linNotHeld, nil
		}
		return linOK, err
	}
	switch {
	case errors.Is(err, redcoord.ErrUpgrade):
		return linUpgrade, nil
	case err != nil:
		return 0, err
	case ok:
		return linOK, nil
	}
	return linBusy, nil
}

// testLinModel shows that the checker can fail: hand-made histories that no
// correct lock produces are rejected, and a legal one is accepted.
func testLinModel(t *testing.T) {
	op := func(h int, o linOp, out linOutput, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: h, Input: linInput{h, o}, Call: call, Output: out, Return: ret}
	}
	t.Run("two writers overlap", func(t *testing.T) {
		require.False(t, porcupine.CheckOperations(linModel, []porcupine.Operation{
			op(0, linLock, linOK, 0, 10),
			op(1, linTryLock, linOK, 20, 30), // before 0 released
			op(0, linUnlock, linOK, 40, 50),
			op(1, linUnlock, linOK, 60, 70),
		}))
	})
	t.Run("reader inside writer", func(t *testing.T) {
		require.False(t, porcupine.CheckOperations(linModel, []porcupine.Operation{
			op(0, linTryLock, linOK, 0, 10),
			op(1, linRLock, linOK, 20, 30),
			op(0, linUnlock, linOK, 40, 50),
		}))
	})
	t.Run("release of a hold already released", func(t *testing.T) {
		require.False(t, porcupine.CheckOperations(linModel, []porcupine.Operation{
			op(0, linTryRLock, linOK, 0, 10),
			op(0, linRUnlock, linOK, 20, 30),
			op(0, linRUnlock, linOK, 40, 50),
		}))
	})
	t.Run("busy TryLock on a free lock", func(t *testing.T) {
		require.False(t, porcupine.CheckOperations(linModel, []porcupine.Operation{
			op(0, linTryRLock, linOK, 0, 10),
			op(0, linRUnlock, linOK, 20, 30),
			op(1, linTryLock, linBusy, 40, 50),
		}))
	})
	t.Run("legal", func(t *testing.T) {
		require.True(t, porcupine.CheckOperations(linModel, []porcupine.Operation{
			op(0, linLock, linOK, 0, 10),
			op(1, linTryLock, linOK, 5, 45), // overlaps 0's Unlock: linearized after it
			op(2, linTryRLock, linBusy, 12, 14),
			op(0, linUnlock, linOK, 20, 30),
			op(2, linUnlock, linNotHeld, 32, 34),
			op(1, linRLock, linOK, 50, 60), // a downgrade
			op(1, linUnlock, linOK, 61, 62),
			op(2, linTryRLock, linOK, 63, 64),
			op(2, linLock, linUpgrade, 65, 66),
			op(1, linRUnlock, linOK, 70, 80),
			op(2, linRUnlock, linOK, 70, 80),
		}))
	})
}
