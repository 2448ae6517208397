package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
)

const transferAccounts = 6

// transferIn is one operation of the transfers' history: a handle locks
// or unlocks the accounts in mask (bit i: account i).
type transferIn struct {
	handle int
	mask   uint8
	unlock bool
}

// transferState is who holds each account's lock (-1: nobody).
type transferState [transferAccounts]int8

// transferModel is the sequential specification of the accounts' locks: a
// Lock takes every account of its mask at once, when all are free; an
// Unlock frees them all, when the handle holds them all. Only Locks that
// acquired are in the history (one that timed out changes nothing).
var transferModel = porcupine.Model{
	Init: func() any {
		var s transferState
		for i := range s {
			s[i] = -1
		}
		return s
	},
	Step: func(state, input, _ any) (bool, any) {
		s, in := state.(transferState), input.(transferIn)
		for i := range s {
			if in.mask&(1<<i) == 0 {
				continue
			}
			if in.unlock && s[i] != int8(in.handle) || !in.unlock && s[i] != -1 {
				return false, state
			}
			if in.unlock {
				s[i] = -1
			} else {
				s[i] = int8(in.handle)
			}
		}
		return true, s
	},
	DescribeOperation: func(input, _ any) string {
		in := input.(transferIn)
		if in.unlock {
			return fmt.Sprintf("h%d unlock %06b", in.handle, in.mask)
		}
		return fmt.Sprintf("h%d lock %06b", in.handle, in.mask)
	},
}

// 32 handles in 4 processes, 15 transfers each, move money between 6 accounts (plain Redis
// keys, read and written without transactions: only the locks protect
// them), each transfer under a MultiMutex of its two accounts: the total
// is conserved, and the history of Locks and Unlocks, checked with
// Porcupine, never has two holders of an account at once. A Lock is
// checked over the round trip of its last script (the one that took the
// last names), an Unlock over its whole call (it releases name by name).
func TestMultiTransfersLinearizable(t *testing.T) {
	if testing.Short() {
		t.Skip("480 transfers, twice")
	}
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		const (
			procs, handles, perH = 4, 32, 15
			initial              = 100
		)
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		store := srv.Client(t)
		for i := range transferAccounts {
			require.NoError(t, store.Set(ctx, "acct:"+strconv.Itoa(i), initial, 0).Err())
		}
		cs := make([]*redcoord.Client, procs)
		for i := range cs {
			rdb := srv.Client(t, func(o *redis.Options) { o.PoolSize = 2 * handles / procs })
			rdb.AddHook(locktest.Spans{Start: start})
			cs[i] = locktest.NewClient(t, rdb)
		}
		var (
			mu  sync.Mutex
			ops []porcupine.Operation
			wg  sync.WaitGroup
		)
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		for h := range handles {
			wg.Go(func() {
				rnd := rand.New(rand.NewPCG(seed, uint64(h)))
				for range perH {
					from, to := rnd.IntN(transferAccounts), rnd.IntN(transferAccounts-1)
					if to >= from {
						to++
					}
					mask := uint8(1)<<from | uint8(1)<<to
					names := []string{"acct" + strconv.Itoa(from), "acct" + strconv.Itoa(to)}
					mm := rlock.NewMulti(cs[h%procs], names)
					var sp locktest.Span
					lctx, lcancel := context.WithTimeout(locktest.WithSpan(ctx, &sp), 2*time.Second)
					err := mm.Lock(lctx)
					lcancel()
					if errors.Is(err, context.DeadlineExceeded) {
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					call, ret := sp.Get()
					lock := porcupine.Operation{ClientId: h, Input: transferIn{handle: h, mask: mask}, Call: call, Return: ret}

					a, errA := store.Get(ctx, "acct:"+strconv.Itoa(from)).Int()
					b, errB := store.Get(ctx, "acct:"+strconv.Itoa(to)).Int()
					if err := errors.Join(errA, errB); err != nil {
						t.Error(err)
						return
					}
					amount := rnd.IntN(10)
					store.Set(ctx, "acct:"+strconv.Itoa(from), a-amount, 0)
					store.Set(ctx, "acct:"+strconv.Itoa(to), b+amount, 0)

					ucall := time.Since(start).Nanoseconds()
					if err := mm.Unlock(ctx); err != nil {
						t.Error(err)
						return
					}
					unlock := porcupine.Operation{ClientId: h, Input: transferIn{handle: h, mask: mask, unlock: true},
						Call: ucall, Return: time.Since(start).Nanoseconds()}
					mu.Lock()
					ops = append(ops, lock, unlock)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		total := 0
		for i := range transferAccounts {
			n, err := store.Get(ctx, "acct:"+strconv.Itoa(i)).Int()
			require.NoError(t, err)
			total += n
		}
		assert.Equal(t, transferAccounts*initial, total, "money was made or lost: two holders of an account at once")
		t.Logf("%d transfers in %v", len(ops)/2, time.Since(start).Round(time.Millisecond))

		res, info := porcupine.CheckOperationsVerbose(transferModel, ops, time.Minute)
		if res != porcupine.Ok {
			path := filepath.Join(t.ArtifactDir(), "transfers.html")
			_ = porcupine.VisualizePath(transferModel, info, path)
			t.Fatalf("history %s (seed %d); visualization (kept with -artifacts): %s", res, seed, path)
		}
	})
}
