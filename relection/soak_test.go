package relection_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/relection"
)

// soakEnv sets how many campaigns TestSoak runs (1000 by default, 50 with
// -short; CI sets 300).
const soakEnv = "REDCOORD_SOAK_CAMPAIGNS"

// fencedStore keeps the highest term that wrote to it and refuses a write
// with a lower one (the same term may write again).
var fencedStore = redis.NewScript(`
local high = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) < high then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1])
return 1
`)

// soakWorld is what TestSoak's workers share.
type soakWorld struct {
	t       *testing.T
	srv     *redistest.Server
	store   *redis.Client
	left    atomic.Int64 // campaigns still to win
	ttl     time.Duration
	poll    time.Duration
	fail    context.CancelFunc // ends the soak after a worker's error
	mu      sync.Mutex
	terms   []uint64 // every term a Campaign returned with, of the campaigns counted
	final   uint64   // the highest term a Campaign returned with
	refused int      // writes refused to leaders whose lead was not lost
	kills   []time.Duration
	pauses  int
}

func (w *soakWorld) proc() *locktest.Proc {
	return locktest.NewProc(w.t, w.srv.Options(), redcoord.WithLeaseTTL(w.ttl), redcoord.WithMaxPollInterval(w.poll))
}

func (w *soakWorld) write(ctx context.Context, term uint64) bool {
	n, err := fencedStore.Run(ctx, w.store, []string{"store"}, term).Int()
	w.check(err, "fenced write")
	return n == 1
}

// check reports an unexpected error of a worker and ends the soak.
func (w *soakWorld) check(err error, what string) bool {
	if err != nil {
		w.t.Errorf("%s: %v", what, err)
		w.fail()
	}
	return err == nil
}

// 8 processes (Clients) campaign in turn until 1000 campaigns are won.
// Each leader writes to a fenced store at the start and the end of its
// term, then resigns, or proclaims a new value first, or dies (its Client
// closed without Resign), or pauses past its lease (its connections drop
// every byte) and writes with its old term once the next leader has
// written. Never two leaders at once: no live leader's write is refused,
// and every paused one's is. Terms strictly increase, every observer sees
// the same sequence of leaders, in which every term a Campaign won
// appears, and a dead leader is replaced within a lease TTL and one poll
// interval.
func TestSoak(t *testing.T) {
	campaigns := 1000
	if testing.Short() {
		campaigns = 50
	}
	if v := os.Getenv(soakEnv); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, soakEnv)
		campaigns = n
	}
	srv := redistest.Real(t)
	w := &soakWorld{t: t, srv: srv, store: srv.Client(t), ttl: 300 * time.Millisecond, poll: 500 * time.Millisecond}
	w.left.Store(int64(campaigns))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	w.fail = cancel

	const observers = 3
	octx, stopObservers := context.WithCancel(ctx)
	defer stopObservers()
	seen := make([][]relection.Leader, observers)
	var owg sync.WaitGroup
	for i := range observers {
		c := locktest.NewClient(t, srv.Client(t), redcoord.WithLeaseTTL(w.ttl))
		ch := relection.New(c, "soak").Observe(octx)
		owg.Go(func() {
			for l := range ch {
				w.mu.Lock()
				seen[i] = append(seen[i], l)
				w.mu.Unlock()
			}
		})
	}

	const procs = 8
	var wg sync.WaitGroup
	for i := range procs {
		wg.Go(func() { w.run(ctx, i) })
	}
	wg.Wait()
	require.NoError(t, ctx.Err(), "the soak ended early")

	w.mu.Lock()
	require.Len(t, w.terms, campaigns)
	last := w.final // the last leader's: it resigned without proclaiming, and nobody followed
	w.mu.Unlock()
	locktest.Eventually(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		for i := range seen {
			if n := len(seen[i]); n < 2 || seen[i][n-1].Term != 0 || seen[i][n-2].Term < last {
				return false // the last leader, then nobody: its Resign
			}
		}
		return true
	}, "every observer saw the last leader")
	stopObservers()
	owg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()

	assert.Zero(t, w.refused, "a live leader's write was refused: two leaders at once")
	for i := 1; i < observers; i++ {
		assert.Equal(t, seen[0], seen[i], "observer %d saw another sequence", i)
	}
	var observed []uint64 // the terms, each once; nobody (term 0) between them
	for _, l := range seen[0] {
		if l.Term == 0 {
			continue
		}
		if n := len(observed); n > 0 {
			require.GreaterOrEqual(t, l.Term, observed[n-1], "terms go back")
			if l.Term == observed[n-1] {
				continue // a proclaimed value
			}
		}
		observed = append(observed, l.Term)
	}
	slices.Sort(w.terms)
	for i := 1; i < len(w.terms); i++ {
		require.Less(t, w.terms[i-1], w.terms[i], "two Campaigns won the same term")
	}
	for _, term := range w.terms {
		_, found := slices.BinarySearch(observed, term)
		assert.True(t, found, "term %d was never observed", term)
	}
	limit := w.ttl + w.poll
	for _, d := range w.kills {
		assert.LessOrEqual(t, d, limit, "a dead leader was replaced after %v", d)
	}
	t.Logf("%d campaigns, %d changes observed, %d leaders killed (replaced after at most %v), %d paused",
		campaigns, len(seen[0]), len(w.kills), slices.Max(append(w.kills, 0)), w.pauses)
}

// run is one process's worker: it campaigns until no campaigns are left,
// and stands for a new process each time its leader dies or pauses.
func (w *soakWorld) run(ctx context.Context, i int) {
	t := w.t
	rnd := rand.New(rand.NewPCG(uint64(i), 7))
	p := w.proc()
	defer func() { p.Kill() }()
	for gen := 0; ctx.Err() == nil; gen++ {
		e := relection.New(p.C, "soak")
		if !w.check(e.Campaign(ctx, fmt.Sprintf("p%d.%d", i, gen)), "Campaign") {
			return
		}
		term := e.Token()
		w.mu.Lock()
		w.final = max(w.final, term)
		w.mu.Unlock()
		w.checkedWrite(ctx, e, term) // the next leader has written when the store's term passes this one
		if w.left.Add(-1) < 0 {
			w.check(e.Resign(ctx), "Resign")
			return
		}
		w.mu.Lock()
		w.terms = append(w.terms, term)
		w.mu.Unlock()
		switch r := rnd.IntN(100); {
		case r < 3: // dies
			died := time.Now()
			p.Kill()
			p = w.proc()
			w.waitNext(ctx, term)
			w.mu.Lock()
			w.kills = append(w.kills, time.Since(died))
			w.mu.Unlock()
			continue
		case r < 5: // pauses past its lease
			p.Faults.Stall()
			w.waitNext(ctx, term)
			assert.False(t, w.write(ctx, term), "a paused leader's write was taken after the next leader wrote")
			p.Faults.Unstall()
			select {
			case <-e.Lost():
			case <-time.After(10 * time.Second):
				w.check(errors.New("a paused leader's Lost stayed open"), "pause")
			}
			p.Kill()
			p = w.proc()
			w.mu.Lock()
			w.pauses++
			w.mu.Unlock()
			continue
		case r < 15:
			if err := e.Proclaim(ctx, fmt.Sprintf("p%d.%d+", i, gen)); err != nil && !errors.Is(err, redcoord.ErrLeaseLost) {
				w.check(err, "Proclaim")
				return
			}
		}
		w.checkedWrite(ctx, e, term)
		if err := e.Resign(ctx); err != nil && !errors.Is(err, redcoord.ErrLeaseLost) {
			w.check(err, "Resign")
			return
		}
	}
}

// checkedWrite writes with term; a refused write is a fault unless the
// leader's lead was lost (a lease that ran out on a slow machine).
func (w *soakWorld) checkedWrite(ctx context.Context, e *relection.Election, term uint64) {
	if w.write(ctx, term) {
		return
	}
	select {
	case <-e.Lost():
		return
	case <-time.After(w.ttl):
		w.mu.Lock()
		w.refused++
		w.mu.Unlock()
	}
}

// waitNext waits until a leader after term has written to the store, at
// most 10s.
func (w *soakWorld) waitNext(ctx context.Context, term uint64) {
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end) && ctx.Err() == nil; {
		high, err := w.store.Get(ctx, "store").Uint64()
		if err == nil && high > term {
			return
		}
		time.Sleep(time.Millisecond)
	}
	w.check(fmt.Errorf("no leader after term %d wrote within 10s", term), "waitNext")
}
