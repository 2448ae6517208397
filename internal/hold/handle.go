package hold

import (
	"context"
	"errors"
	"time"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/scripts"
	"github.com/redcoord/redcoord/internal/wait"
)

// Handle is what a handle on an exclusive lock is made of, whatever its
// queueing policy: the Base, the lock hash and the hold. rlock, rfairlock
// and rrwlock wrap it and keep their acquire loops. Its zero value is not
// usable; use NewHandle. A Handle must not be copied.
type Handle struct {
	Base
	Lock    scripts.Lock  // the lock hash; zero when Err is set
	MaxPoll time.Duration // 0: the Client's
	Value   string        // stored with its holds, for Holder
	Hold    *Tracker
	Renewed scripts.Lease // the lease argument of a hold the watchdog renews
}

// NewHandle does what New does for every lock kind: it checks c, name and
// opts, applies opts, and names the lock hash of kind for a fresh owner. It
// does no I/O. A bad argument is recorded in Err, and the lock is then left
// unnamed; the caller names any keys of its own with Key only if Err is nil.
func NewHandle[O ~func(*Options) error](c *redcoord.Client, name, kind string, opts []O) *Handle {
	h := &Handle{Hold: New()}
	if !h.Init(c, name) {
		return h
	}
	var o Options
	if h.Err = core.ApplyOptions(&o, opts); h.Err != nil {
		return h
	}
	h.MaxPoll, h.Value = o.MaxPoll, o.Value
	h.Hold.Observe(h.S.Config.Observer, kind, name)
	owner := h.Owner
	h.Hold.Heed(h.S.Notices, core.Held{Owner: owner})
	h.Lock = scripts.Lock{
		Hash: h.Key("lock"), Fence: h.Key("fence"), Marks: h.Key("rel:" + h.S.ID),
		Waiters: h.Key("waiters"),
		Kind:    kind, Owner: owner, Publish: h.S.PublishCommand(), Channel: h.S.Channel(name),
		Notice: h.S.NoticePrefix(name),
	}.Prepared(h.S.Config.TTL)
	h.Renewed = scripts.NewLease(h.TTL(), h.S.EncodeMeta(h.TTL(), false, h.Value))
	return h
}

// LeaseArg returns the lease argument of an acquire with a fixed lease
// (fixed > 0) or renewed by the watchdog.
func (h *Handle) LeaseArg(fixed time.Duration) scripts.Lease {
	if fixed == 0 {
		return h.Renewed
	}
	return scripts.NewLease(fixed, h.S.EncodeMeta(fixed, true, h.Value))
}

// Got is what an acquiring try got: Redis's reply, when its request was
// sent (no later than the lease began), and what the handle held then.
type Got struct {
	scripts.Acquired
	Since time.Time
	Held  Belief // the belief the request was sent with (Op.Start)
}

// Leaver undoes an acquire request that Redis may have applied.
type Leaver interface {
	Leave(ctx context.Context) error
}

// Took records a successful acquire, as Tracker.Took, with the watchdog
// renewing the lock hash (fixed == 0) or a timer ending it. If that fails
// (the Client closed meanwhile) it gives the hold back with undo.
func (h *Handle) Took(ctx context.Context, got Got, fixed time.Duration, undo Leaver) error {
	arg := scripts.TokenArg(got.Token)
	script, keys, args := h.Lock.Renewal(h.TTL(), arg)
	return h.tookOn(ctx, h.Hold, lease.Renewal{Script: script, Keys: keys, Args: args}, arg, got, fixed, undo)
}

// TookOn is Took for a hold tracked by t and renewed by r: a read-write
// lock's read holds have a Tracker and a renewal of their own. A fresh hold
// whose reply came late is confirmed first (see Confirm); a re-entry keeps
// the lease it found, and fails if the hold it re-entered was lost
// meanwhile (see Tracker.Took).
func (h *Handle) TookOn(ctx context.Context, t *Tracker, r lease.Renewal, got Got, fixed time.Duration, undo Leaver) error {
	return h.tookOn(ctx, t, r, nil, got, fixed, undo)
}

// tookOn is TookOn with the hold's token as a script argument, nil to make
// it from got.Token.
func (h *Handle) tookOn(ctx context.Context, t *Tracker, r lease.Renewal, arg any, got Got, fixed time.Duration, undo Leaver) error {
	since := got.Since
	var err error
	if !Reentry(got.Held, got.Count) {
		length := fixed
		if fixed == 0 {
			length = h.TTL()
		}
		since, err = Confirm(ctx, h.S.Writer(), r, since, length, fixed > 0)
	}
	if err == nil {
		err = t.Took(got.Held, got.Token, got.Count, Lease{Watchdog: h.S.Watchdog, Renewal: r, Fixed: fixed, Since: since, TokenArg: arg})
	}
	if err != nil {
		// Bounded as a failed wait's leave is: the caller's ctx may be
		// done, and a stuck connection must not hold the call for ever.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait.LeaveTimeout)
		_ = undo.Leave(lctx)
		cancel()
	}
	return err
}

// Tried turns the error of a single acquire attempt into TryLock's reply:
// a busy lock is (false, nil).
func Tried(err error) (bool, error) {
	if errors.Is(err, wait.ErrBusy) {
		return false, nil
	}
	return err == nil, err
}
