package hold

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/option"
	"github.com/redcoord/redcoord/internal/scripts"
	"github.com/redcoord/redcoord/internal/wait"
)

// Options are what a lock handle's options set. Each lock package declares
// its own Option, a func(*options) error over an unexported alias of
// Options, so that its docs stay its own and show no internal type.
type Options struct {
	MaxPoll time.Duration // 0: the Client's
	Value   string        // what the handle says it is, stored with its holds
}

// MaxValueLen is the longest value a handle may say it is (Value).
const MaxValueLen = 4096

// Value is the option behind each lock package's WithValue.
func Value(v string) func(*Options) error {
	return func(o *Options) error {
		if len(v) > MaxValueLen {
			return errs.Invalid("WithValue", "must be at most %d bytes, got %d", MaxValueLen, len(v))
		}
		o.Value = v
		return nil
	}
}

// MaxPoll is the option behind each lock package's WithMaxPollInterval.
func MaxPoll(d time.Duration) func(*Options) error {
	return func(o *Options) error {
		if d <= 0 {
			return errs.Invalid("WithMaxPollInterval", "must be > 0, got %v", d)
		}
		o.MaxPoll = d
		return nil
	}
}

// Base is what every handle is made of, locks and semaphores alike: the
// Session, the name, the error New recorded, and a fresh owner's request
// sequence. A Base must not be copied.
type Base struct {
	S     *core.Session // nil when New was given a nil Client
	Name  string
	Err   error  // from New: a bad argument, reported by every method
	Owner string // "" when Err is set

	req atomic.Uint64 // request sequence: request ids are "<owner>:<seq>"
}

// Init does what New does for every primitive: it checks c and name, and
// names a fresh owner. It does no I/O. A bad argument is recorded in Err,
// and Init reports whether there was none.
func (b *Base) Init(c *redcoord.Client, name string) bool {
	b.Name = name
	if c == nil {
		b.Err = errs.Invalid("c", "nil *redcoord.Client")
		return false
	}
	b.S = core.Of(c)
	if b.Err = core.CheckName(name); b.Err != nil {
		return false
	}
	b.Owner = b.S.NewOwner()
	return true
}

// Key returns the key of one part of the primitive.
func (b *Base) Key(part string) string { return b.S.Key(b.Name, part) }

// Check returns the first reason an operation must not start: a bad
// argument to New, a closed Client, or a done ctx.
func (b *Base) Check(ctx context.Context) error {
	if b.Err != nil {
		return b.Err
	}
	return b.S.Check(ctx)
}

// CheckRelease is Check for a release, which a done ctx does not stop: a
// bad argument to New, or a closed Client.
func (b *Base) CheckRelease() error {
	if b.Err != nil {
		return b.Err
	}
	return b.S.Err()
}

// CheckAcquire is Check for an acquire: a closed Client or a done ctx also
// matches ErrNotAcquired, which says what did not happen beside why.
func (b *Base) CheckAcquire(ctx context.Context) error {
	err := b.Check(ctx)
	if err != nil && b.Err == nil {
		err = errs.Both(errs.ErrNotAcquired, err)
	}
	return err
}

// NextRequest returns a fresh request id, "<owner>:<seq>", for idempotent
// retries.
func (b *Base) NextRequest() string {
	var buf [96]byte
	id := append(append(buf[:0], b.Owner...), ':')
	return string(strconv.AppendUint(id, b.req.Add(1), 10))
}

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
	if h.Err = option.Apply(&o, opts); h.Err != nil {
		return h
	}
	h.MaxPoll, h.Value = o.MaxPoll, o.Value
	h.Hold.Observe(h.S.Config.Observer, kind, name)
	owner := h.Owner
	h.Hold.Heed(h.S.Notices, core.Held{Owner: owner})
	h.Lock = scripts.Lock{
		Lock: h.Key("lock"), Fence: h.Key("fence"), Marks: h.Key("rel:" + h.S.ID),
		Waiters: h.Key("waiters"),
		Kind:    kind, Owner: owner, Publish: h.S.PublishCommand(), Channel: h.S.Channel(name),
		Notice: h.S.NoticePrefix(name),
	}.Prepared(h.S.Config.TTL)
	h.Renewed = scripts.NewLease(h.S.Config.TTL, h.S.EncodeMeta(h.S.Config.TTL, false, h.Value))
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
	script, keys, args := h.Lock.Renewal(h.S.Config.TTL, arg)
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
			length = h.S.Config.TTL
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

// Release is a release script: it drops one hold of the owner (every hold
// if all) with request id req and returns the remaining count (-1: not
// held).
type Release func(ctx context.Context, rdb redis.Scripter, req string, all bool) (int64, error)

// Unlock releases one hold with release, and reports ErrNotHeld or
// ErrLeaseLost as Tracker.Released.
func (h *Handle) Unlock(ctx context.Context, release Release) error {
	return h.UnlockOn(ctx, h.Hold, "lock", release)
}

// UnlockOn is Unlock for a hold tracked by t; what names the hold in errors
// ("lock", "read lock"). The release is sent on the Session's
// ReleaseContext, even when ctx is done; one that fails leaves the hold to
// end with its lease, as EndRelease says.
func (h *Handle) UnlockOn(ctx context.Context, t *Tracker, what string, release Release) error {
	if err := h.CheckRelease(); err != nil {
		return err
	}
	ctx, cancel := h.S.ReleaseContext(ctx)
	defer cancel()
	what += " " + strconv.Quote(h.Name)
	all, err := t.StartRelease(ctx, what)
	if err != nil {
		return err
	}
	n, err := release(ctx, h.S.Writer(), h.NextRequest(), all)
	return t.EndRelease(n, err, what)
}

// ReleaseNamed is a release script that drops only the hold of the owner
// whose token is named (a script argument), every hold of it at once, with
// request id req; it returns the remaining count (-1: not held).
type ReleaseNamed func(ctx context.Context, rdb redis.Scripter, req string, named any) (int64, error)

// ReleaseLost is the release of a call that must not drop the handle's
// current hold: the call found the handle holding nothing (token is 0), or
// the hold of token it named was lost while the call waited for its turn,
// and the handle may hold another since (a fair lock's grant to an acquire
// of the handle that waits). It does not take the handle's turn. When the
// hold was lost, release deletes what Redis may still have of it, named by
// its token (a later hold has another), and the error matches ErrLeaseLost;
// a handle that held nothing and lost nothing gets ErrNotHeld, without a
// request. what names the hold in errors ("election").
func (h *Handle) ReleaseLost(ctx context.Context, what string, token uint64, release ReleaseNamed) error {
	if err := h.Check(ctx); err != nil {
		return err
	}
	what += " " + strconv.Quote(h.Name)
	named := h.Hold.LostHold()
	if token != 0 {
		named = scripts.TokenArg(token)
	}
	if named == nil {
		return fmt.Errorf("%w: %s is not held by this handle", errs.ErrNotHeld, what)
	}
	if _, err := release(ctx, h.S.Writer(), h.NextRequest(), named); err != nil && !errors.Is(err, errs.ErrNotReplicated) {
		// What Redis may still have of the lost hold is left to its lease.
		return errs.Lost("%s: the hold was lost before this call (deleting what Redis may still have of it failed: %s)",
			what, strings.TrimPrefix(err.Error(), "redcoord: "))
	}
	return errs.Lost("%s: the hold was lost before this call", what)
}

// Extend gives the handle's hold of the lock hash a fixed lease of length
// from now (see Tracker.Extend), with lock_extend: the watchdog stops
// renewing it, a renewal already on its way leaves it alone, and Lost
// closes when it ends. A hold that is gone is ErrLeaseLost.
func (h *Handle) Extend(ctx context.Context, length time.Duration) error {
	if err := core.CheckLease("lease", length); err != nil {
		return err
	}
	if err := h.Check(ctx); err != nil {
		return err
	}
	send := func() (bool, error) {
		return h.Lock.Extend(ctx, h.S.Writer(), length, scripts.TokenArg(h.Hold.Token()), h.S.EncodeMeta(length, true, h.Value))
	}
	return h.Hold.Extend(ctx, "lock "+strconv.Quote(h.Name), length, send)
}

// inUse are the parts of a name whose keys exist while any lock kind holds
// it or waits for it: its hold, read holds, queues and waiter registries.
var inUse = []string{"lock", "waiters", "queue", "alive", "readers", "leases", "writers", "wwaiters", "elect-alive"}

// Forget deletes the name's fence when no lock of any kind holds the name
// or waits for it (none of the keys of inUse exists) and the fence's last
// token is not ahead of the server's clock, and reports whether it did;
// otherwise it is (false, nil), and nothing is deleted. The owners'
// markers are left to expire: a late copy of a request must still be
// refused, a retried release still recognised.
func (h *Handle) Forget(ctx context.Context) (bool, error) {
	if err := h.Check(ctx); err != nil {
		return false, err
	}
	busy := make([]string, len(inUse))
	for i, part := range inUse {
		busy[i] = h.Key(part)
	}
	return h.Lock.Forget(ctx, h.S.Writer(), busy)
}

// ForceUnlock deletes the lock with force, which reports whether it was
// held; a hold of this handle is then lost.
func (h *Handle) ForceUnlock(ctx context.Context, force func(context.Context, redis.Scripter) (bool, error)) (bool, error) {
	if err := h.Check(ctx); err != nil {
		return false, err
	}
	ok, err := force(ctx, h.S.RDB)
	if err == nil && ok {
		h.Hold.Forced()
	}
	return ok, err
}

// State reads who holds the lock.
func (h *Handle) State(ctx context.Context) (scripts.State, error) {
	if err := h.Check(ctx); err != nil {
		return scripts.State{}, err
	}
	return h.Lock.State(ctx, h.S.RDB)
}

// IsLocked reports whether any owner holds the lock.
func (h *Handle) IsLocked(ctx context.Context) (bool, error) {
	st, err := h.State(ctx)
	return st.Held, err
}

// HoldCount returns how many times this handle holds the lock, as Redis sees it.
func (h *Handle) HoldCount(ctx context.Context) (int64, error) {
	st, err := h.State(ctx)
	if err != nil || st.Owner != h.Lock.Owner {
		return 0, err
	}
	return st.Count, nil
}

// Holder returns who holds the lock; ok is false when it is free.
func (h *Handle) Holder(ctx context.Context) (redcoord.Holder, bool, error) {
	st, err := h.State(ctx)
	if err != nil || !st.Held {
		return redcoord.Holder{}, false, err
	}
	return Holder(st), true, nil
}
