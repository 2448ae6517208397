package hold

import (
	"errors"
	"strings"
	"time"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/acquire"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/scripts"
)

// Handle is what a handle on an exclusive lock is made of, whatever its
// queueing policy: the Base, the lock hash and the hold. rlock, rfairlock,
// rrwlock and relection wrap it, and each acquires through Acquire with a
// Kind of its own (Unfair, Fair's, rrwlock's writer; rrwlock's reads keep
// their own Tracker). Its zero value is not usable; use NewHandle. A
// Handle must not be copied.
type Handle struct {
	Base
	Lock    scripts.Lock // the lock hash; only its Kind, which names it in errors, when Err is set
	opts    *Options     // the options given; nil: none
	Hold    *Tracker
	renewed *scripts.LeaseArg // the lease argument the watchdog renews: the Session's, unless the handle has a Value
}

// NewHandle does what New does for every lock kind: it checks c, name and
// opts, applies opts, and names the lock hash of kind for a fresh owner,
// and the kind's own parts, family, which it returns as keys in their
// order, all in one string; with core.KeyWaiters among them, the lock
// hash's waiter registry. It does no I/O. A bad argument is recorded in
// Err, and the lock and keys are then left unnamed.
func NewHandle[O ~func(*Options) error](c *redcoord.Client, name, kind string, opts []O,
	family ...core.Part) (h *Handle, keys []string) {
	h = &Handle{Hold: New(), Lock: scripts.Lock{Kind: kind}}
	if !h.Init(c, name) {
		return h, nil
	}
	var o Options
	if h.Err = core.ApplyOptions(&o, opts); h.Err != nil {
		return h, nil
	}
	if o != (Options{}) {
		h.opts = &o
	}
	h.Hold.Observe(h.S.Config.Observer, kind, name)
	// The owner id is the Client's id and a number (NewOwner): written
	// after the markers key, which ends with the Client's id, it shares
	// the keys' string.
	seq := strings.TrimPrefix(h.Owner, h.S.ID)
	parts := append(append([]core.Part{core.KeyLock, core.KeyFence, core.ChanName}, family...), core.KeyMarkers)
	k := h.S.KeysThen(name, h.S.ID, seq, parts...)
	last := k[len(k)-1]
	marks := last[:len(last)-len(seq)]
	if len(seq) < len(h.Owner) {
		h.Owner = last[len(marks)-len(h.S.ID):]
	}
	owner := h.Owner
	h.Hold.Heed(h.S.Notices, core.Held{Owner: owner})
	keys = k[3 : len(k)-1 : len(k)-1]
	h.Lock = scripts.Lock{
		Hash: k[0], Fence: k[1], Marks: marks,
		Kind: kind, Owner: owner, Publish: h.S.PublishCommand(), Channel: k[2],
	}
	for i, p := range family {
		if p == core.KeyWaiters {
			h.Lock.Waiters = keys[i]
		}
	}
	h.Lock = h.Lock.Prepared(h.S.Config.TTL)
	h.renewed = h.S.RenewedLease(h.Value())
	return h, keys
}

// MaxPoll returns the handle's longest wait between polls; 0: the
// Client's.
func (h *Handle) MaxPoll() time.Duration {
	if h.opts == nil {
		return 0
	}
	return h.opts.MaxPoll
}

// Value returns what the handle says it is, stored with its holds (see
// Holder); "" when it says nothing.
func (h *Handle) Value() string {
	if h.opts == nil {
		return ""
	}
	return h.opts.Value
}

// LeaseArg returns the lease argument of an acquire with a fixed lease
// (fixed > 0) or renewed by the watchdog.
func (h *Handle) LeaseArg(fixed time.Duration) scripts.LeaseArg {
	if fixed == 0 {
		return *h.renewed
	}
	return scripts.NewLeaseArg(fixed, h.S.EncodeMeta(fixed, true, h.Value()))
}

// HandOn gives wake, a message that a script left in its reply for this
// Client's own channel ch instead of publishing it (see scripts.Handed),
// to the Client's waiters on ch as if it had arrived; "" does nothing.
// A wake that finds no waiter there (they all left meanwhile) is dropped,
// as a message that arrived would be: the last of them to leave passed
// the wake on in Redis (lock_leave).
func (h *Handle) HandOn(ch, wake string) {
	if wake == "" {
		return
	}
	if hb, err := h.S.Hub(); err == nil && hb != nil {
		hb.Deliver(ch, wake)
	}
}

// Tried turns the error of a single acquire attempt into TryLock's reply:
// a busy lock is (false, nil).
func Tried(err error) (bool, error) {
	if errors.Is(err, acquire.ErrBusy) {
		return false, nil
	}
	return err == nil, err
}
