package rfairlock_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rfairlock"
)

// 8 handles, each in its own process (Client), ask for a held lock 100ms
// apart and acquire in exactly that order; 100 times, on 100 names at once.
// Each handle is confirmed queued before the next one starts, so the test
// asserts order, never timing.
func TestStartOrderIsAcquireOrder(t *testing.T) {
	const (
		slots  = 8
		rounds = 100
		gap    = 100 * time.Millisecond
	)
	srv := redistest.Real(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	clients := make([]*redcoord.Client, slots+1) // the last one holds
	for i := range clients {
		clients[i] = locktest.NewClient(t, srv.Client(t, func(o *redis.Options) { o.PoolSize = rounds / 2 }))
	}
	name := func(r int) string { return fmt.Sprintf("order:%d", r) }
	holders := make([]*rfairlock.Mutex, rounds)
	for r := range holders {
		holders[r] = rfairlock.New(clients[slots], name(r))
		require.NoError(t, holders[r].Lock(ctx))
	}

	var (
		mu    sync.Mutex
		order = make([][]int, rounds) // per name: the slots, in the order they acquired
		wg    sync.WaitGroup
	)
	errs := make(chan error, slots*rounds)
	for i := 0; i < slots; i++ {
		for r := 0; r < rounds; r++ {
			m := rfairlock.New(clients[i], name(r))
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := m.Lock(ctx); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				order[r] = append(order[r], i)
				mu.Unlock()
				errs <- m.Unlock(ctx)
			}()
		}
		time.Sleep(gap)
		for r := 0; r < rounds; r++ {
			locktest.Eventually(t, func() bool {
				n, err := holders[r].QueueLength(ctx)
				return err == nil && n == i+1
			}, fmt.Sprintf("slot %d queued on %s", i, name(r)))
		}
	}
	for _, h := range holders {
		require.NoError(t, h.Unlock(ctx))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	want := make([]int, slots)
	for i := range want {
		want[i] = i
	}
	bad := 0
	for r, got := range order {
		if !slices.Equal(want, got) {
			bad++
			t.Errorf("%s: acquired in order %v, want %v", name(r), got, want)
		}
	}
	assert.Zero(t, bad, "rounds out of order")
}

// enqueues is a go-redis hook that records, for each acquire request, when
// its first try was sent and when its reply arrived: once the reply is in,
// the request is queued (or holds the lock) on the server.
type enqueues struct {
	sha string

	mu    sync.Mutex
	first map[string]try      // request id -> its first try
	order map[string][]string // owner -> its requests, in the order they first tried
}

type try struct{ sent, replied time.Time }

func newEnqueues(sha string) *enqueues {
	return &enqueues{sha: sha, first: map[string]try{}, order: map[string][]string{}}
}

func (e *enqueues) DialHook(next redis.DialHook) redis.DialHook { return next }

func (e *enqueues) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (e *enqueues) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if cmd.Name() != "evalsha" || len(args) < 3 || args[1] != e.sha {
			return next(ctx, cmd)
		}
		// EVALSHA sha numkeys keys... kind publish channel marker-lifetime owner req ...
		n, _ := args[2].(int)
		if len(args) < 3+n+6 {
			return next(ctx, cmd)
		}
		sent := time.Now()
		err := next(ctx, cmd)
		replied := time.Now()
		owner, req := args[3+n+4].(string), args[3+n+5].(string)
		e.mu.Lock()
		if _, seen := e.first[req]; !seen && err == nil {
			e.first[req] = try{sent, replied}
			e.order[owner] = append(e.order[owner], req)
		}
		e.mu.Unlock()
		return err
	}
}
