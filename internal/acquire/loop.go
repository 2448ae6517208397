// Package acquire is the loop every primitive acquires with (locks,
// semaphores, the latch's wait), whatever its scripts:
//
//  1. Run the try script. Acquired: return. Otherwise it says how long the
//     blocker may hold on (its remaining lease, or the soonest expiry).
//  2. Subscribe to the primitive's channel through the Hub and wait for the
//     server's confirmation.
//  3. Try again: this closes the window between 1 and 2, in which a release
//     would have notified nobody. (Skipped when other waiters of this Client
//     were already subscribed: the release woke one of them instead. A
//     wait whose Mode registers early, on a channel already confirmed,
//     registers with the Hub before step 1 and skips 2 and 3: a wake sent
//     to its id (its Client) after its try reaches it. See Mode.)
//  4. Wait for a wake from the Hub, a timer of min(hint, MaxPoll), or the end
//     of the context or of the Client. Then go to 3.
//  5. When the wait ends unacquired, run the primitive's leave script with a
//     fresh short context (leave a queue, undo a grant that raced in).
//
// A blocking acquire's try that fails with an outage's error
// (outage.Transient) is sent again after a pause, until it is answered or
// the wait ends (see try). Pub/sub is a hint: the timer bounds every wait,
// so a lost message costs at most MaxPoll. A blocking acquire that finds
// waiters of its own Client already on the channel skips step 1 and joins
// them: it does not overtake them, and the next release wakes one of them.
// When the Hub cannot subscribe (refused by an ACL, or no confirmation in
// time) the loop polls.
//
// The packages around it: core is what a Client shares (its session, keys,
// notices, and its waiters' one registration per name: ClientWaiter); hold
// is a handle and its holds, with the one acquire sequence of the exclusive
// locks (hold.Handle.Acquire), each kind's tries running in this loop.
package acquire

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/hub"
	"github.com/redcoord/redcoord/internal/obs"
	"github.com/redcoord/redcoord/internal/outage"
)

// LeaveTimeout bounds the leave script that runs after a failed wait.
const LeaveTimeout = 5 * time.Second

// Config is what the loop needs of the Client.
type Config struct {
	Hub     func() (*hub.Hub, error) // nil, or a nil Hub: poll
	MaxPoll time.Duration            // the longest wait between tries
	Done    <-chan struct{}          // closed when the Client closes
	Logger  *slog.Logger
	Observe obs.Func // nil: no observer
	// Rand draws a random duration in [0, n) for a back-off's jitter; nil:
	// from math/rand/v2.
	Rand func(n time.Duration) time.Duration
}

// Attempt is the outcome of one try.
type Attempt struct {
	Acquired bool
	Hint     time.Duration // how long the blocker may hold on; <= 0: unknown
}

// Mode is how a primitive's waiters are woken, which decides three steps
// of the loop:
//
//	mode         registers before its first try   joins local waiters   tries again after subscribing
//	Broadcast    when it has an ID                 never                 always
//	Targeted     yes                               never                 always
//	ClientQueue  yes                               when Behind           on a channel of its own, or none
//
// Registering before the first try (when the channel is confirmed
// already) lets a wake sent after that try reach the waiter, so steps 2
// and 3 are skipped. Trying again after subscribing closes the window in
// which a wake reached nobody; a ClientQueue wait that shares its
// subscription skips it, since a wake in the window woke a waiter ahead.
type Mode uint8

const (
	// Broadcast: a wake reaches every waiter at once ('*': a latch that
	// opens, readers let in), so one sent before this waiter registered
	// reached the others but not it. Waiters may share an ID ("open").
	Broadcast Mode = iota
	// Targeted: a wake names one waiter by its ID (a fair queue's grant).
	Targeted
	// ClientQueue: the channel is the Client's own for the name, on which
	// a release wakes its longest-waiting waiter, or as many as fit its
	// permits (the Client's one registration in a waiter registry).
	ClientQueue
)

// Spec is one acquire.
type Spec struct {
	Kind, Name string // the primitive and its name, for the observer
	Channel    string // the primitive's notification channel
	Mode       Mode
	ID         string // the waiter's id for targeted messages ("" = none)
	// Once makes one attempt and never waits: a busy primitive gives ErrBusy.
	Once bool
	// Behind (ClientQueue): waiters of this Client may be ahead on the
	// channel; when there are, this one waits behind them without a try.
	Behind bool
	// Weight is how many permits the waiter needs (see
	// hub.Subscription.SetWeight); 0 means 1. It matters to a message that
	// wakes as many waiters as fit ("n:K"; see package hub).
	Weight int64
}

// early reports whether the wait registers with the Hub before its first try.
func (s Spec) early() bool { return !s.Once && (s.Mode != Broadcast || s.ID != "") }

// retries reports whether the wait tries again once subscribed, on sub.
func (s Spec) retries(sub *hub.Subscription) bool {
	return sub == nil || !sub.Shared() || s.Mode != ClientQueue
}

// Wake is what the loop tells a try of its wait.
type Wake struct {
	// Payload is the payload of a message targeted at the Spec's ID that
	// woke this try; "" otherwise.
	Payload string
	// Sub is the subscription that a message woke this try on; nil
	// otherwise.
	Sub *hub.Subscription
	// Polling says the wait cannot hear a wake: it wanted a subscription
	// and did not get one (refused, or not confirmed in time). Such a try
	// must not register to be woken (a waiter registry): a release would
	// spend its wake on a waiter that cannot hear it. It drops the
	// registration an earlier try of the wait made, and stops its
	// heartbeat.
	Polling bool
}

// Trier makes the attempts of one acquire; T is what an attempt that
// acquired got (a hold's token and count, a permit), returned by Acquire.
type Trier[T any] interface {
	// Try makes one attempt; w says what woke it and whether its wait can
	// hear a wake.
	Try(ctx context.Context, w Wake) (T, Attempt, error)
	// Leave undoes what a try may have done when the acquire fails (its
	// reply lost, a queue entry). It runs with a fresh context.
	Leave(ctx context.Context) error
}

// Funcs is a Trier made of two functions; a nil Leave undoes nothing.
type Funcs[T any] struct {
	TryFunc   func(ctx context.Context, w Wake) (T, Attempt, error)
	LeaveFunc func(ctx context.Context) error
}

// Try calls TryFunc.
func (f Funcs[T]) Try(ctx context.Context, w Wake) (T, Attempt, error) {
	return f.TryFunc(ctx, w)
}

// Leave calls LeaveFunc, if any.
func (f Funcs[T]) Leave(ctx context.Context) error {
	if f.LeaveFunc == nil {
		return nil
	}
	return f.LeaveFunc(ctx)
}

// ErrBusy is what Acquire returns for a Once attempt that found the primitive taken.
var ErrBusy = errs.Sentinel("busy")

// Result is what an acquire got: what its acquiring try got, and whether
// it waited (reached steps 2 to 5) before that.
type Result[T any] struct {
	Got    T
	Waited bool
	// Woke is when the Hub delivered the wake that the acquiring try
	// answered (see hub.Subscription.Woke); zero when no wake of a message
	// led to that try: the first try, the try after subscribing, a poll.
	Woke time.Time
}

// Acquire runs the loop until a try acquires, a try fails, ctx is done or the
// Client closes, and returns what the acquiring try got. A wait that ends
// unacquired returns an error matching both errs.ErrNotAcquired and
// ctx.Err() (or errs.ErrClosed); a failed try returns its error. In both
// cases Leave has run.
func Acquire[T any](ctx context.Context, cfg Config, s Spec, t Trier[T]) (Result[T], error) {
	start := time.Now()
	r, err := acquire(ctx, cfg, s, t)
	if cfg.Observe == nil {
		return r, err
	}
	switch {
	case err == nil:
		now := time.Now()
		var woken time.Duration // the hand-off: from the wake to the hold
		if !r.Woke.IsZero() {
			woken = now.Sub(r.Woke)
		}
		cfg.Observe.Emit(obs.Event{Kind: obs.Acquired, Primitive: s.Kind, Name: s.Name,
			Wait: now.Sub(start), Woken: woken, Waited: r.Waited, Context: ctx})
	case errors.Is(err, errs.ErrNotAcquired) && !errors.Is(err, ErrBusy):
		cfg.Observe.Emit(obs.Event{Kind: obs.WaitEnded, Primitive: s.Kind, Name: s.Name,
			Wait: time.Since(start), Waited: r.Waited, Err: err, Context: ctx})
	case r.Waited:
		// A try that failed after the wait began: the wait is over all the same.
		cfg.Observe.Emit(obs.Event{Kind: obs.WaitEnded, Primitive: s.Kind, Name: s.Name,
			Wait: time.Since(start), Waited: true, Err: err, Context: ctx})
	}
	return r, err
}

// acquire is Acquire without the observer: step 1, then the wait.
func acquire[T any](ctx context.Context, cfg Config, s Spec, t Trier[T]) (Result[T], error) {
	// r paces the tries through an outage (see try).
	r := &outage.Retry{Kind: s.Kind, Name: s.Name, MaxPoll: cfg.MaxPoll, Done: cfg.Done,
		Logger: cfg.Logger, Observe: cfg.Observe, Rand: cfg.Rand}
	if s.Behind && s.Mode == ClientQueue && !s.Once && queued(cfg, s.Channel) {
		// Waiters of this Client are ahead: join them rather than overtake
		// them. One of them is woken by the next release and takes it.
		return waitFor(ctx, cfg, s, t, Attempt{}, nil, r)
	}
	var early *hub.Subscription
	if s.early() {
		early = listen(cfg, s)
	}
	got, a, err := try(ctx, s, t, Wake{}, r)
	if err != nil || a.Acquired {
		if early != nil {
			early.Close()
		}
		if err != nil {
			err = settle(ctx, cfg, s, t, err)
		}
		return Result[T]{Got: got}, err
	}
	if s.Once {
		return Result[T]{Got: got}, ErrBusy
	}
	return waitFor(ctx, cfg, s, t, a, early, r)
}

// listen registers a targeted wait before its first try when this Client's
// channel is already subscribed and confirmed (other waiters are on it, or
// it lingers after the last one left): a wake sent to the request after the
// try registered it then reaches it, and step 3 is not needed. It returns
// nil when the channel is not confirmed yet; the wait then subscribes after
// its first try, as usual.
func listen(cfg Config, s Spec) *hub.Subscription {
	if cfg.Hub == nil {
		return nil
	}
	h, err := cfg.Hub()
	if err != nil || h == nil {
		return nil
	}
	return h.Listen(s.Channel, s.ID, s.Weight)
}

// queued reports whether this Client already has waiters on channel that
// the next release can wake: waiters without a pending wake. A pending
// wake was a release's, which took the Client's registration with it;
// until its waiter tries again (which may be late: the try it had in
// flight may be waiting for a lost reply until the read timeout), the
// Client is not registered, and no release would wake a waiter that
// joined without a try of its own.
func queued(cfg Config, channel string) bool {
	if cfg.Hub == nil {
		return false
	}
	h, err := cfg.Hub()
	return err == nil && h != nil && h.Unwoken(channel) > 0
}

// waitFor is steps 2 to 5; a is the outcome of the last try, if any. sub,
// when not nil, was registered before that try (see listen): steps 2 and 3
// are skipped. r paces the tries through an outage.
func waitFor[T any](ctx context.Context, cfg Config, s Spec, t Trier[T], a Attempt, sub *hub.Subscription,
	r *outage.Retry) (res Result[T], err error) {
	res.Waited = true
	if cfg.Observe != nil {
		cfg.Observe.Emit(obs.Event{Kind: obs.Waiting, Primitive: s.Kind, Name: s.Name, Context: ctx})
	}
	var wake <-chan struct{}
	tried := false
	if sub == nil {
		if sub, tried, err = subscribe(ctx, cfg, s); err != nil {
			return res, settle(ctx, cfg, s, t, err)
		}
	}
	// A wait whose subscription was refused or never confirmed polls, and
	// tells its tries so (see Wake.Polling).
	polling := sub == nil && tried
	if sub != nil {
		defer sub.Close()
		wake = sub.C()
	}
	// Step 3, unless the Mode says a wake in the window woke another
	// waiter here (a weighed ClientQueue wait joins only behind a waiter
	// as light, which such a wake fits too).
	if tried && s.retries(sub) {
		if res.Got, a, err = try(ctx, s, t, Wake{Polling: polling}, r); err != nil || a.Acquired {
			return res, settle(ctx, cfg, s, t, err)
		}
	}
	timer := time.NewTimer(interval(a.Hint, cfg.MaxPoll))
	defer timer.Stop()
	for {
		w := Wake{Polling: polling}
		woken := false
		select {
		case <-ctx.Done():
			return res, settle(ctx, cfg, s, t, ended(ctx.Err()))
		case <-cfg.Done:
			return res, settle(ctx, cfg, s, t, ended(errs.ErrClosed))
		case <-wake:
			w.Payload, w.Sub, woken = sub.Payload(), sub, true
		case <-timer.C:
		}
		res.Woke = time.Time{}
		if woken {
			res.Woke = sub.Woke()
		}
		if res.Got, a, err = try(ctx, s, t, w, r); err != nil || a.Acquired {
			err = settle(ctx, cfg, s, t, err)
			if err != nil && woken {
				// The wake was meant for a waiter that will try. After the
				// leave, so that the try of the waiter woken here, which
				// may register its Client again, cannot hide from the leave
				// script that the Client's wake was given up (see
				// sem_leave.lua).
				sub.PassOn()
			}
			return res, err
		}
		timer.Reset(interval(a.Hint, cfg.MaxPoll))
	}
}

// subscribe returns the wait's subscription, or nil to poll; tried says a
// subscription was attempted (and time may have passed). A subscription
// that is refused, or not confirmed within MaxPoll (a dead connection), is
// given up for this wait, which polls.
func subscribe(ctx context.Context, cfg Config, s Spec) (sub *hub.Subscription, tried bool, err error) {
	if cfg.Hub == nil {
		return nil, false, nil
	}
	h, err := cfg.Hub()
	if err != nil || h == nil {
		return nil, false, err
	}
	sctx, cancel := context.WithTimeout(ctx, cfg.MaxPoll)
	defer cancel()
	sub, err = h.SubscribeWeighted(sctx, s.Channel, s.ID, s.Weight)
	switch {
	case err == nil:
		return sub, true, nil
	case ctx.Err() != nil:
		return nil, true, ended(ctx.Err())
	case errors.Is(err, errs.ErrClosed):
		return nil, true, ended(err)
	default: // refused, or unconfirmed: the Hub logs it
		return nil, true, nil
	}
}

// settle returns nil for an acquired try; otherwise it runs Leave and
// returns err.
func settle(ctx context.Context, cfg Config, s Spec, t interface{ Leave(context.Context) error }, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if !errors.Is(err, errs.ErrNotAcquired) {
			err = ended(err)
		}
	}
	// A bad argument, a wrong type or unset permits are found before any
	// write: there is nothing to undo.
	if !errors.Is(err, errs.ErrInvalidArgument) && !errors.Is(err, errs.ErrWrongType) &&
		!errors.Is(err, errs.ErrNotSet) {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), LeaveTimeout)
		defer cancel()
		if lerr := t.Leave(lctx); lerr != nil {
			// The server check warns once of a command the server refuses.
			level := slog.LevelWarn
			if errors.Is(lerr, errs.ErrRefused) {
				level = slog.LevelDebug
			}
			cfg.Logger.Log(lctx, level, "redcoord: leave after a failed wait", "channel", s.Channel, "err", lerr)
		}
	}
	return err
}

// ended says why a wait ended unacquired.
func ended(cause error) error {
	return errs.Both(errs.ErrNotAcquired, cause)
}

// interval is how long to wait before the next try: the blocker's hint plus
// a millisecond of slack for clock granularity, never more than max.
func interval(hint, max time.Duration) time.Duration {
	if hint <= 0 || hint+time.Millisecond > max {
		return max
	}
	return hint + time.Millisecond
}
