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
package lease

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/errs"
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
}

// Watchdog renews watched leases. Its zero value is not usable; use New.
type Watchdog struct {
	rdb      Pipeliner
	ttl      time.Duration
	interval time.Duration
	log      *slog.Logger

	mu      sync.Mutex          // guards the fields below
	leases  map[*Lease]struct{} // the watched leases
	running bool                // the goroutine was started
	closed  bool

	ctx  context.Context // cancelled by Close: stops the goroutine and its requests
	stop context.CancelFunc
	done chan struct{} // closed when the goroutine has exited
}

// New returns a Watchdog that renews leases of length ttl every ttl/3. It
// starts its goroutine on the first Add.
func New(rdb Pipeliner, ttl time.Duration, log *slog.Logger) *Watchdog {
	ctx, stop := context.WithCancel(context.Background())
	return &Watchdog{
		rdb: rdb, ttl: ttl, interval: ttl / 3, log: log,
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
	expiry := time.NewTimer(time.Hour)
	expiry.Stop()
	defer expiry.Stop()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-t.C:
			if at, ok := w.tick(); ok {
				expiry.Reset(time.Until(at))
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
	cmds := w.renew(ctx, batch)

	var lost []*Lease
	w.mu.Lock()
	for i, l := range batch {
		if _, watched := w.leases[l]; !watched {
			continue // removed while the renewal was in flight
		}
		n, err := cmds[i].Int64()
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

// renew sends one pipeline of EVALSHA; if Redis lost the scripts (a restart,
// SCRIPT FLUSH, a failover) it loads them and sends the failed ones again.
func (w *Watchdog) renew(ctx context.Context, batch []*Lease) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(batch))
	pipe := w.rdb.Pipeline()
	for i, l := range batch {
		cmds[i] = l.r.Script.EvalSha(ctx, pipe, l.r.Keys, l.r.Args...)
	}
	_, _ = pipe.Exec(ctx)

	var again []int
	for i, c := range cmds {
		if err := c.Err(); err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return cmds
	}
	pipe = w.rdb.Pipeline()
	for _, i := range again {
		l := batch[i]
		cmds[i] = l.r.Script.Eval(ctx, pipe, l.r.Keys, l.r.Args...)
	}
	_, _ = pipe.Exec(ctx)
	return cmds
}
