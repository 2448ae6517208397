// Package lease is the watchdog: one goroutine per Client that keeps every
// watched lease alive (lock holds taken without a fixed lease, waiter
// heartbeats, reader leases, renewable permits).
//
// Every tick (TTL/3) it renews all of them in one pipeline: one round trip
// per node, however many leases. A renewal that replies 0 means the hold is
// gone: the lease is marked lost at once. Loss is also reported by the
// clock: a timer, armed at all times at the earliest deadline of the
// watched leases (the last acknowledged renewal + TTL - Margin), marks lost
// a lease whose renewals have been failing, at that moment, whatever the
// ticks' I/O is doing. Loss tells the lease's Holder; so does Stop (and
// Close), for every lease still watched, since none is kept after it.
//
// With Replicas set, each node's pipeline ends with WAIT, and a hold's
// renewal counts as successful only if enough replicas acknowledged it: a
// replica promoted after a failover has the lease only as its last
// acknowledged renewal left it, so the holder must not count on more.
// Waiters' heartbeats count as soon as Redis applies them.
package lease

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/obs"
)

// Pipeliner is what the watchdog needs of a go-redis client: pipelines,
// and SCRIPT LOAD for a renewal's script that the server lost.
type Pipeliner interface {
	Pipeline() redis.Pipeliner
	redis.Scripter
}

// Renewal is one lease's renewal: a script that replies 1 (renewed) or 0
// (the hold is gone), its keys and arguments.
type Renewal struct {
	Script *redis.Script
	Keys   []string
	Args   []any
	// Last, if not nil, is sent after Args: a hold's own argument (its
	// token) after arguments its handle's holds share, which the Renewal
	// then does not change.
	Last any
	// Waiter marks a waiter's heartbeat, which holds nothing: it counts
	// when Redis applies it, acknowledged by replicas or not.
	Waiter bool
}

// Arguments returns the renewal's arguments: Args, then Last if set.
func (r Renewal) Arguments() []any {
	if r.Last == nil {
		return r.Args
	}
	return append(r.Args[:len(r.Args):len(r.Args)], r.Last)
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
	observe  obs.Func // nil: no observer
	// epoch is when the Watchdog was made: a Lease keeps its times as
	// durations since, which take a third of a time.Time's room.
	epoch time.Time

	mu      sync.Mutex        // guards the fields below
	leases  map[*Lease]uint64 // the watched leases, each with its place in the order they were watched
	watched uint64            // how many times a lease was watched (Watch, Again)
	running bool              // the goroutine was started
	closed  bool
	rearm   chan struct{} // Add tells the goroutine to re-arm its expiry timer
	armed   time.Time     // when the expiry timer fires; zero: stopped

	ctx   context.Context // cancelled by Close: stops the goroutine and its requests
	stop  context.CancelFunc
	done  chan struct{}  // closed when the goroutine has exited
	ticks sync.WaitGroup // the ticks running, each in a goroutine of its own
}

// New returns a Watchdog that renews leases of length ttl every ttl/3, each
// acknowledged by replicas as asks. It starts its goroutine on the first
// Add.
func New(rdb Pipeliner, ttl time.Duration, log *slog.Logger, replicas Replicas, observe obs.Func) *Watchdog {
	ctx, stop := context.WithCancel(context.Background())
	return &Watchdog{
		rdb: rdb, ttl: ttl, interval: ttl / 3, log: log, replicas: replicas, observe: observe, epoch: time.Now(),
		leases: make(map[*Lease]uint64),
		rearm:  make(chan struct{}, 1),
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
	holder Holder
	lastOK time.Duration // guarded by w.mu: when the last successful renewal was sent, since w.epoch
}

// A Holder is told when a lease it watches ends (see Watch).
type Holder interface {
	// LeaseEnded is called for l, the lease the Watch call returned,
	// outside the watchdog's lock, when it ends while watched (once per
	// Watch or Again): closed is false when l was found gone, true when
	// Stop ended it.
	LeaseEnded(l *Lease, closed bool)
}

// lostFunc is Add's onLost as a Holder.
type lostFunc func(closed bool)

func (f lostFunc) LeaseEnded(_ *Lease, closed bool) { f(closed) }

// Add watches a lease that was last set in Redis no earlier than since (take
// it before sending the acquire request). When the lease is found gone, the
// watchdog stops watching it and calls onLost(false) from its goroutine;
// Stop calls onLost(true) for every lease still watched. Add returns
// ErrClosed after Stop or Close.
func (w *Watchdog) Add(r Renewal, since time.Time, onLost func(closed bool)) (*Lease, error) {
	return w.Watch(r, since, lostFunc(onLost))
}

// Watch is Add telling h instead of calling a func: a holder that keeps
// the returned Lease tells by it which of its leases ended, with no
// closure made per lease.
func (w *Watchdog) Watch(r Renewal, since time.Time, h Holder) (*Lease, error) {
	l := &Lease{w: w, r: r, holder: h, lastOK: since.Sub(w.epoch)}
	if err := l.watch(); err != nil {
		return nil, err
	}
	return l, nil
}

// watch adds l to the watched leases.
func (l *Lease) watch() error {
	w := l.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errs.ErrClosed
	}
	w.watched++
	w.leases[l] = w.watched
	if !w.running {
		w.running = true
		go w.run()
	}
	// The timer need not fire earlier for a lease due after the deadline it
	// is armed for: it re-arms for the next deadline when it fires.
	if w.armed.IsZero() || w.deadline(l).Before(w.armed) {
		select {
		case w.rearm <- struct{}{}:
		default:
		}
	}
	return nil
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

// Renewed returns when the last successful renewal of the lease was sent
// (or, before any, the since given to Add): Redis keeps the lease at least
// a TTL from then. Remove freezes it: Again watches the lease from it.
func (l *Lease) Renewed() time.Time {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	return l.w.epoch.Add(l.lastOK)
}

// Again watches l again after Remove, as it was watched, from its last
// successful renewal (see Renewed): the same Lease, so that its Holder
// knows it still, even by a report of its end that the watchdog made
// before Remove and delivers after Again (a renewal that found it gone).
// It returns ErrClosed after Stop or Close.
func (l *Lease) Again() error { return l.watch() }

// Ends returns when a removed lease may be gone from Redis, by this
// process's clock: the Deadline it had when it was removed.
func (l *Lease) Ends() time.Time { return l.Renewed().Add(l.w.ttl - Margin(l.w.ttl)) }

// Deadline returns when the lease may be gone from Redis unless renewed
// first, by this process's clock: its last successful renewal + TTL -
// Margin, when the watchdog reports it lost.
func (l *Lease) Deadline() time.Time {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	return l.w.deadline(l)
}

// Len returns the number of watched leases.
func (w *Watchdog) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.leases)
}

// Close stops the goroutine and waits for it to exit, bounded by ctx, and
// for the renewals in flight to end, bounded by ctx and by one renew
// interval: their requests end with Close where go-redis honours a
// context, and a tick stuck on a connection that ignores it (ReadTimeout
// -1) ends when its connection does, at the latest when the go-redis client
// is closed. It calls Stop first. Idempotent.
func (w *Watchdog) Close(ctx context.Context) error {
	w.Stop()
	w.mu.Lock()
	running := w.running
	w.mu.Unlock()
	if !running {
		return nil
	}
	select {
	case <-w.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	ticked := make(chan struct{})
	go func() { w.ticks.Wait(); close(ticked) }()
	grace := time.NewTimer(w.interval)
	defer grace.Stop()
	select {
	case <-ticked:
	case <-grace.C:
		w.log.Warn("redcoord: closed with a lease renewal still waiting for its reply; it ends with its connection")
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// Stop ends the watch without waiting: no renewal starts after it returns,
// Add fails, and every lease still watched is dropped, its Holder told
// called before Stop returns, so that its holder stops counting on it.
// Watched leases are not released; they expire in Redis, within a TTL.
// Idempotent.
func (w *Watchdog) Stop() {
	w.mu.Lock()
	w.closed = true
	w.stop()
	ended := w.inOrder(func(*Lease) bool { return true })
	clear(w.leases)
	w.mu.Unlock()
	for _, l := range ended {
		l.holder.LeaseEnded(l, true)
	}
}

// maxTicks bounds the ticks in flight at once. A tick waits for its replies
// as long as go-redis lets it, which with ReadTimeout -1 (and the context
// ignored, as go-redis does unless ContextTimeoutEnabled) is for ever on a
// connection that swallows writes. So a tick that is still running when the
// next is due does not hold it up: the next runs beside it, on another
// connection of the pool. Three stuck ticks span a whole TTL, by when every
// lease they carried is lost; rather than take ever more connections from
// the user's pool, later ticks then wait for one of them to end (an error
// is logged). Loss is still reported on time, by the expiry timer.
const maxTicks = 3

// Margin is how much earlier than its TTL after the last acknowledged
// renewal a lease is reported lost: a hundredth of the TTL. The renewal's
// time is taken when it was sent, before Redis set the lease, so the margin
// only has to cover a difference in the rates of the two clocks (NTP slews
// a clock by at most 0.05%) and the delay of the timer that reports it.
func Margin(ttl time.Duration) time.Duration { return ttl / 100 }

func (w *Watchdog) run() {
	defer close(w.done)
	t := time.NewTicker(w.interval)
	defer t.Stop()
	// expiry fires at the earliest moment a watched lease may be gone from
	// Redis: the oldest acknowledged renewal + TTL - Margin. It is armed
	// whatever the ticks are doing, and re-armed after every change, so that
	// loss is reported by the clock, not when some I/O returns.
	expiry := time.NewTimer(time.Hour)
	defer expiry.Stop()
	w.arm(expiry, true)
	ticked := make(chan struct{}, maxTicks)
	running := 0
	stuck := false // the stuck ticks were reported
	for {
		select {
		case <-w.ctx.Done():
			return // Close waits for the ticks still running
		case <-t.C:
			if running == maxTicks {
				if !stuck {
					stuck = true
					w.log.Error("redcoord: lease renewals are stuck: no reply for a lease TTL on several connections; "+
						"give the go-redis client a ReadTimeout, or ContextTimeoutEnabled, so that a tick ends",
						"ticks", running)
				}
				continue
			}
			stuck = false
			running++
			w.ticks.Go(func() {
				w.tick()
				ticked <- struct{}{} // buffered for every tick that may run
			})
		case <-ticked:
			running--
			w.arm(expiry, false)
		case <-w.rearm:
			w.arm(expiry, false)
		case <-expiry.C:
			w.expire()
			w.arm(expiry, true)
		}
	}
}

// arm sets timer to fire at the earliest deadline of the watched leases.
// With none watched, a timer still pending (idle false) is left to fire at
// the deadline it has and find nothing, and an idle one (it fired, or was
// never armed) is armed for a lease TTL from now: either way the timer is
// due no later than the deadline of a lease added from now on, so that a
// lock taken and released in a loop gives Add no reason to wake the
// goroutine.
func (w *Watchdog) arm(timer *time.Timer, idle bool) {
	w.mu.Lock()
	var first time.Time
	for l := range w.leases {
		if d := w.deadline(l); first.IsZero() || d.Before(first) {
			first = d
		}
	}
	if first.IsZero() {
		if !idle && !w.armed.IsZero() {
			w.mu.Unlock()
			return
		}
		first = time.Now().Add(w.ttl - Margin(w.ttl))
	}
	w.armed = first
	w.mu.Unlock()
	timer.Stop()
	timer.Reset(time.Until(first))
}

// deadline returns when l may be gone from Redis, by the watchdog's clock;
// the caller holds w.mu.
func (w *Watchdog) deadline(l *Lease) time.Time {
	return w.epoch.Add(l.lastOK + w.ttl - Margin(w.ttl))
}

// expire marks lost the leases whose deadline has passed.
func (w *Watchdog) expire() {
	now := time.Now()
	w.mu.Lock()
	lost := w.inOrder(func(l *Lease) bool { return !now.Before(w.deadline(l)) })
	for _, l := range lost {
		w.log.Warn("redcoord: lease lost: not renewed within its TTL", "keys", l.r.Keys)
		delete(w.leases, l)
	}
	w.mu.Unlock()
	for _, l := range lost {
		l.holder.LeaseEnded(l, false)
	}
}

// inOrder returns the watched leases for which keep returns true, in the
// order they were watched: a tick's pipeline and the reports of loss follow
// it, not the map's random order, so that runs that watch alike send and
// report alike. The caller holds w.mu.
func (w *Watchdog) inOrder(keep func(*Lease) bool) []*Lease {
	ls := make([]*Lease, 0, len(w.leases))
	for l := range w.leases {
		if keep(l) {
			ls = append(ls, l)
		}
	}
	slices.SortFunc(ls, func(a, b *Lease) int { return cmp.Compare(w.leases[a], w.leases[b]) })
	return ls
}

// tick renews every watched lease in one pipeline per node, and marks lost
// the leases whose hold is gone; a failed renewal is left to the next tick,
// or to the expiry timer when the lease runs out first.
func (w *Watchdog) tick() {
	w.mu.Lock()
	batch := w.inOrder(func(*Lease) bool { return true })
	w.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(w.ctx, w.interval)
	defer cancel()
	sent := time.Now()
	cmds, acked := w.renew(ctx, batch)

	var lost []*Lease
	var first error // the tick's first failure, for the observer
	w.mu.Lock()
	for i, l := range batch {
		if _, watched := w.leases[l]; !watched {
			continue // removed while the renewal was in flight
		}
		n, err := cmds[i].Int64()
		if err == nil && n == 1 && !acked[i] && !l.r.Waiter {
			err = errNotAcked
		}
		if first == nil {
			first = err
		}
		switch {
		case err == nil && n == 1:
			if d := sent.Sub(w.epoch); d > l.lastOK { // ticks may end out of order
				l.lastOK = d
			}
			continue
		case err == nil && l.r.Waiter:
			// A waiter's registration goes when it acquires or leaves, and a
			// renewal sent just before may find it gone: no hold was lost.
			w.log.Debug("redcoord: waiter registration gone", "keys", l.r.Keys)
		case err == nil:
			w.log.Warn("redcoord: lease lost: hold is gone", "keys", l.r.Keys)
		case !time.Now().Before(w.deadline(l)):
			w.log.Warn("redcoord: lease lost: not renewed within its TTL", "keys", l.r.Keys, "err", err)
		default:
			w.log.Debug("redcoord: lease renewal failed; will retry", "keys", l.r.Keys, "err", err)
			continue
		}
		delete(w.leases, l)
		lost = append(lost, l)
	}
	w.mu.Unlock()
	w.observe.Emit(obs.Event{Kind: obs.Renewed, Count: len(batch), Took: time.Since(sent), Err: first})
	for _, l := range lost {
		l.holder.LeaseEnded(l, false)
	}
}

// errNotAcked is a renewal that Redis applied but too few replicas
// acknowledged in time: it does not count.
var errNotAcked = errors.New("too few replicas acknowledged the renewal")
