// Package lease is the watchdog: one goroutine per Client that keeps every
// watched lease alive (lock holds taken without a fixed lease, waiter
// heartbeats, reader leases, renewable permits).
//
// Every tick (TTL/3) it renews all of them in one pipeline: one round trip
// per node, however many leases. A renewal that replies 0 means the hold is
// gone: the lease is marked lost at once. A lease whose last successful
// renewal is older than the TTL is lost too, because Redis has expired it by
// then: a timer reports it at that moment, not at the next tick. Loss calls
// the lease's onLost.
//
// With Replicas set, each node's pipeline ends with WAIT, and a hold's
// renewal counts as successful only if enough replicas acknowledged it: a
// replica promoted after a failover has the lease only as its last
// acknowledged renewal left it, so the holder must not count on more.
// Waiters' heartbeats count as soon as Redis applies them.
package lease

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/redirect"
)

// Pipeliner is what the watchdog needs of a go-redis client.
type Pipeliner interface {
	Pipeline() redis.Pipeliner
}

// Renewal is one lease's renewal: a script that replies 1 (renewed) or 0
// (the hold is gone), its keys and arguments.
type Renewal struct {
	Script *redis.Script
	Keys   []string
	Args   []any
	// Waiter marks a waiter's heartbeat, which holds nothing: it counts
	// when Redis applies it, acknowledged by replicas or not.
	Waiter bool
}

// Replicas is how many replicas must acknowledge a renewal (WAIT N
// Timeout) before it counts; N = 0 asks for none, and adds no command.
type Replicas struct {
	N       int
	Timeout time.Duration
}

// Watchdog renews watched leases. Its zero value is not usable; use New.
type Watchdog struct {
	rdb      Pipeliner
	ttl      time.Duration
	interval time.Duration
	log      *slog.Logger
	replicas Replicas

	mu      sync.Mutex          // guards the fields below
	leases  map[*Lease]struct{} // the watched leases
	running bool                // the goroutine was started
	closed  bool

	ctx  context.Context // cancelled by Close: stops the goroutine and its requests
	stop context.CancelFunc
	done chan struct{} // closed when the goroutine has exited
}

// New returns a Watchdog that renews leases of length ttl every ttl/3, each
// acknowledged by replicas as asks. It starts its goroutine on the first
// Add.
func New(rdb Pipeliner, ttl time.Duration, log *slog.Logger, replicas Replicas) *Watchdog {
	ctx, stop := context.WithCancel(context.Background())
	return &Watchdog{
		rdb: rdb, ttl: ttl, interval: ttl / 3, log: log, replicas: replicas,
		leases: make(map[*Lease]struct{}),
		ctx:    ctx, stop: stop,
		done: make(chan struct{}),
	}
}

// Interval returns the time between renewals.
func (w *Watchdog) Interval() time.Duration { return w.interval }

// Lease is one watched lease.
type Lease struct {
	w      *Watchdog
	r      Renewal
	onLost func()
	lastOK time.Time // guarded by w.mu: when the last successful renewal was sent
}

// Add watches a lease that was last set in Redis no earlier than since (take
// it before sending the acquire request). When the lease is found gone, the
// watchdog stops watching it and calls onLost from its goroutine. Add returns
// ErrClosed after Close.
func (w *Watchdog) Add(r Renewal, since time.Time, onLost func()) (*Lease, error) {
	l := &Lease{w: w, r: r, onLost: onLost, lastOK: since}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, errs.ErrClosed
	}
	w.leases[l] = struct{}{}
	if !w.running {
		w.running = true
		go w.run()
	}
	return l, nil
}

// Remove stops renewing the lease. When Remove returns, no new renewal of it
// is sent, and a renewal already in flight cannot mark it lost; such a
// renewal is harmless, because the script renews only the owner's own hold.
// Removing twice is a no-op.
func (l *Lease) Remove() {
	l.w.mu.Lock()
	delete(l.w.leases, l)
	l.w.mu.Unlock()
}

// Len returns the number of watched leases.
func (w *Watchdog) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.leases)
}

// Close stops the goroutine and waits for it to exit, bounded by ctx.
// Watched leases are not released; they expire in Redis. Idempotent.
func (w *Watchdog) Close(ctx context.Context) error {
	w.mu.Lock()
	running := w.running
	w.closed = true
	w.stop()
	w.mu.Unlock()
	if !running {
		return nil
	}
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *Watchdog) run() {
	defer close(w.done)
	t := time.NewTicker(w.interval)
	defer t.Stop()
	// expiry fires when the first lease whose renewals are failing runs out
	// in Redis, which is between ticks: waiting for the next tick would
	// report the loss up to an interval after another holder may have it.
	// A tick runs in a goroutine of its own, so that expiry fires on time
	// even while a tick waits for its replies (WAIT may take its whole
	// timeout); a tick still running when the next one is due skips it.
	expiry := time.NewTimer(time.Hour)
	expiry.Stop()
	defer expiry.Stop()
	type result struct {
		at      time.Time
		failing bool
	}
	ticked := make(chan result, 1)
	running := false
	for {
		select {
		case <-w.ctx.Done():
			if running {
				<-ticked // its requests end with w.ctx
			}
			return
		case <-t.C:
			if running {
				continue
			}
			running = true
			go func() {
				at, failing := w.tick()
				ticked <- result{at, failing}
			}()
		case r := <-ticked:
			running = false
			if r.failing {
				expiry.Reset(time.Until(r.at))
			}
		case <-expiry.C:
			w.expire()
		}
	}
}

// expire marks lost the leases not renewed within their TTL.
func (w *Watchdog) expire() {
	var lost []*Lease
	w.mu.Lock()
	for l := range w.leases {
		if time.Since(l.lastOK) >= w.ttl {
			w.log.Warn("redcoord: lease lost: not renewed within its TTL", "keys", l.r.Keys)
			delete(w.leases, l)
			lost = append(lost, l)
		}
	}
	w.mu.Unlock()
	for _, l := range lost {
		l.onLost()
	}
}

// tick renews every watched lease in one pipeline and marks lost the leases
// whose hold is gone or whose last renewal is older than the TTL. When some
// renewals failed, it returns when the first of those leases runs out.
func (w *Watchdog) tick() (expiry time.Time, failing bool) {
	w.mu.Lock()
	batch := make([]*Lease, 0, len(w.leases))
	for l := range w.leases {
		batch = append(batch, l)
	}
	w.mu.Unlock()
	if len(batch) == 0 {
		return time.Time{}, false
	}
	ctx, cancel := context.WithTimeout(w.ctx, w.interval)
	defer cancel()
	sent := time.Now()
	cmds, acked := w.renew(ctx, batch)

	var lost []*Lease
	w.mu.Lock()
	for i, l := range batch {
		if _, watched := w.leases[l]; !watched {
			continue // removed while the renewal was in flight
		}
		n, err := cmds[i].Int64()
		if err == nil && n == 1 && !acked[i] && !l.r.Waiter {
			err = errNotAcked
		}
		switch {
		case err == nil && n == 1:
			l.lastOK = sent
			continue
		case err == nil:
			w.log.Warn("redcoord: lease lost: hold is gone", "keys", l.r.Keys)
		case time.Since(l.lastOK) >= w.ttl:
			w.log.Warn("redcoord: lease lost: not renewed within its TTL", "keys", l.r.Keys, "err", err)
		default:
			w.log.Debug("redcoord: lease renewal failed; will retry", "keys", l.r.Keys, "err", err)
			if end := l.lastOK.Add(w.ttl); !failing || end.Before(expiry) {
				expiry, failing = end, true
			}
			continue
		}
		delete(w.leases, l)
		lost = append(lost, l)
	}
	w.mu.Unlock()
	for _, l := range lost {
		l.onLost()
	}
	return expiry, failing
}

// errNotAcked is a renewal that Redis applied but too few replicas
// acknowledged in time: it does not count.
var errNotAcked = errors.New("too few replicas acknowledged the renewal")

// renew renews batch, one pipeline per node, and reports for each lease
// whether its renewal was acknowledged (always, without Replicas). On
// Cluster with Replicas, each lease's renewal goes to the client of the
// primary of its first key, the nodes' pipelines run at once, and a renewal
// answered MOVED or ASK is sent on to the node named, up to redirect.Max
// times, as the ClusterClient would; any failure has the ClusterClient
// reload its slots for the next tick. Without Replicas, go-redis splits one
// pipeline by node and follows redirections itself.
func (w *Watchdog) renew(ctx context.Context, batch []*Lease) ([]*redis.Cmd, []bool) {
	cmds, acked := make([]*redis.Cmd, len(batch)), make([]bool, len(batch))
	c, ok := w.rdb.(redirect.Shards)
	if w.replicas.N == 0 || !ok {
		w.renewOn(ctx, w.rdb, false, batch, all(len(batch)), cmds, acked)
		return cmds, acked
	}
	type target struct {
		node *redis.Client
		ask  bool
	}
	todo := make(map[target][]int)
	for i, l := range batch {
		node, err := c.MasterForKey(ctx, l.r.Keys[0])
		if err != nil {
			cmds[i] = redis.NewCmd(ctx)
			cmds[i].SetErr(err)
			continue
		}
		todo[target{node, false}] = append(todo[target{node, false}], i)
	}
	for round := 0; len(todo) > 0; round++ {
		var wg sync.WaitGroup
		for to, idx := range todo {
			wg.Go(func() { w.renewOn(ctx, to.node, to.ask, batch, idx, cmds, acked) })
		}
		wg.Wait()
		todo = make(map[target][]int)
		if round == redirect.Max {
			break
		}
		for i, cmd := range cmds {
			addr, ask, _ := redirect.Parse(cmd.Err())
			if addr == "" {
				continue
			}
			node, err := redirect.NodeAt(ctx, c, addr)
			if err != nil {
				cmd.SetErr(err)
				continue
			}
			todo[target{node, ask}] = append(todo[target{node, ask}], i)
		}
	}
	for _, cmd := range cmds {
		if cmd.Err() != nil {
			if r, ok := w.rdb.(interface{ ReloadState(context.Context) }); ok {
				r.ReloadState(ctx)
			}
			break
		}
	}
	return cmds, acked
}

// all returns the indexes 0 to n-1.
func all(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// renewOn sends the renewals of batch[idx] in one pipeline on p, each after
// ASKING if ask, ending it with WAIT when Replicas asks for some; if Redis
// lost the scripts (a restart, SCRIPT FLUSH, a failover) it loads them and
// sends the failed ones again, with WAIT again. It sets cmds[i] and
// acked[i] for i in idx.
func (w *Watchdog) renewOn(ctx context.Context, p Pipeliner, ask bool, batch []*Lease, idx []int, cmds []*redis.Cmd, acked []bool) {
	send := func(idx []int, eval bool) {
		pipe := p.Pipeline()
		for _, i := range idx {
			l := batch[i]
			if ask {
				_ = pipe.Process(ctx, redis.NewStatusCmd(ctx, "asking"))
			}
			if eval {
				cmds[i] = l.r.Script.Eval(ctx, pipe, l.r.Keys, l.r.Args...)
			} else {
				cmds[i] = l.r.Script.EvalSha(ctx, pipe, l.r.Keys, l.r.Args...)
			}
		}
		var wait *redis.IntCmd
		if w.replicas.N > 0 {
			wait = redis.NewIntCmd(ctx, "wait", w.replicas.N, w.replicas.Timeout.Milliseconds())
			_ = pipe.Process(ctx, wait)
		}
		_, _ = pipe.Exec(ctx)
		ok := wait == nil || (wait.Err() == nil && wait.Val() >= int64(w.replicas.N))
		for _, i := range idx {
			acked[i] = ok
		}
	}
	send(idx, false)
	var again []int
	for _, i := range idx {
		if err := cmds[i].Err(); err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		send(again, true)
	}
}
