package rlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/hold"
	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/wait"
	"github.com/redcoord/redcoord/scripts"
)

const kind = "rlock"

// Mutex is a handle on a reentrant lock named in Redis. The handle is the
// owner: locking it again re-enters, another handle waits. It is safe for
// concurrent use, but goroutines sharing one handle share its hold, so give
// each goroutine that must exclude the others its own handle.
//
// A Mutex must not be copied after first use.
type Mutex struct {
	_ noCopy

	s    *core.Session
	name string
	err  error // from New: a bad name or option, reported by every method
	lock scripts.Lock
	opt  options
	req  atomic.Uint64 // request sequence, for idempotent retries
	hold *hold.Tracker
}

// New returns a handle on the lock named name. It does no I/O; a bad name or
// option is reported by every method of the handle, as ErrInvalidArgument.
func New(c *redcoord.Client, name string, opts ...Option) *Mutex {
	m := &Mutex{name: name, hold: hold.New()}
	if c == nil {
		m.err = errs.Invalid("c", "nil *redcoord.Client")
		return m
	}
	m.s = c.Session(core.Key{})
	if m.err = core.CheckName(name); m.err != nil {
		return m
	}
	for _, opt := range opts {
		if opt == nil {
			m.err = errs.Invalid("opts", "nil Option")
			return m
		}
		if m.err = opt(&m.opt); m.err != nil {
			return m
		}
	}
	owner := m.s.NewOwner()
	m.lock = scripts.Lock{
		Lock: m.s.Key(name, "lock"), Fence: m.s.Key(name, "fence"), Released: m.s.Key(name, "rel:"+owner),
		Kind: kind, Owner: owner, Publish: m.s.PublishCommand(), Channel: m.s.Channel(name),
	}
	return m
}

// Name returns the lock's name.
func (m *Mutex) Name() string { return m.name }

// Owner returns the handle's owner id, as Holder reports it.
func (m *Mutex) Owner() string { return m.lock.Owner }

// Lock blocks until it holds the lock or ctx is done. The hold's lease is the
// Client's lease TTL, renewed by the watchdog until Unlock, so a holder that
// dies keeps the lock at most one TTL. Locking a handle that holds the lock
// re-enters it at once (one round trip). A wait that ends returns an error
// matching both ErrNotAcquired and ctx.Err(), and leaves Redis as it was.
func (m *Mutex) Lock(ctx context.Context) error {
	return m.acquire(ctx, 0, true)
}

// LockWithLease is Lock with a fixed lease that the watchdog does not renew:
// the hold ends at Unlock or when lease runs out, whichever is first; Lost
// is closed then. A re-entry keeps the first hold's lease. lease must be at
// least 1ms.
func (m *Mutex) LockWithLease(ctx context.Context, lease time.Duration) error {
	if err := core.CheckLease("lease", lease); err != nil {
		return err
	}
	return m.acquire(ctx, lease, true)
}

// TryLock makes one attempt, in one round trip, and never waits: it reports
// whether the handle now holds the lock (with a watchdog-renewed lease).
// A lock held by another owner is (false, nil); a failure is (false, err).
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	err := m.acquire(ctx, 0, false)
	if errors.Is(err, wait.ErrBusy) {
		return false, nil
	}
	return err == nil, err
}

func (m *Mutex) acquire(ctx context.Context, fixed time.Duration, block bool) error {
	if err := m.check(ctx); err != nil {
		if m.err == nil { // closed, or ctx done: not acquired, and why
			err = fmt.Errorf("%w: %w", errs.ErrNotAcquired, err)
		}
		return err
	}
	leaseTTL := fixed
	if fixed == 0 {
		leaseTTL = m.s.Config.TTL
	}
	req := m.nextRequest()
	meta := m.s.EncodeMeta(leaseTTL, fixed > 0)
	var (
		got   scripts.Acquired
		since time.Time // when the successful try was sent: the lease starts no earlier
	)
	try := func(ctx context.Context, _ string) (wait.Attempt, error) {
		sent := time.Now()
		a, err := m.lock.Acquire(ctx, m.s.RDB, req, leaseTTL, meta)
		if err != nil {
			return wait.Attempt{}, err
		}
		got, since = a, sent
		return wait.Attempt{Acquired: a.OK, Hint: a.Wait}, nil
	}
	leave := func(ctx context.Context) error {
		_, err := m.lock.Leave(ctx, m.s.RDB, req)
		return err
	}
	// A handle that holds the lock re-enters at once; one that does not
	// queues behind this Client's waiters instead of overtaking them.
	spec := wait.Spec{Channel: m.lock.Channel, Try: try, Leave: leave, Once: !block,
		Join: m.hold.Count() == 0}
	if err := wait.Acquire(ctx, m.s.Wait(m.opt.maxPoll), spec); err != nil {
		return err
	}
	script, keys, args := m.lock.Renewal(m.s.Config.TTL)
	err := m.hold.Took(got.Token, got.Count, hold.Lease{
		Watchdog: m.s.Watchdog, Renewal: lease.Renewal{Script: script, Keys: keys, Args: args},
		Fixed: fixed, Since: since,
	})
	if err != nil { // the Client closed meanwhile: give the hold back
		_ = leave(context.WithoutCancel(ctx))
	}
	return err
}

// Unlock releases one hold; the last one frees the lock and wakes one waiter
// in each process that has waiters. A handle that does not hold the lock
// gets ErrNotHeld, and ErrLeaseLost (matching ErrNotHeld too) if its hold
// expired or was deleted; Redis is left unchanged. An Unlock that go-redis
// retries after a lost reply is applied once. If Unlock fails for another
// reason, the hold is no longer renewed and expires within one lease.
func (m *Mutex) Unlock(ctx context.Context) error {
	if err := m.check(ctx); err != nil {
		return err
	}
	m.hold.Releasing()
	n, err := m.lock.Release(ctx, m.s.RDB, m.nextRequest())
	if err != nil {
		return err
	}
	return m.hold.Released(n, "lock "+strconv.Quote(m.name))
}

// ForceUnlock deletes the lock whoever holds it, waking a waiter, and reports
// whether it was held. The holder's handle sees Lost closed at its next
// renewal, and ErrLeaseLost from Unlock.
func (m *Mutex) ForceUnlock(ctx context.Context) (bool, error) {
	if err := m.check(ctx); err != nil {
		return false, err
	}
	ok, err := m.lock.Force(ctx, m.s.RDB)
	if err == nil && ok {
		m.hold.Forced()
	}
	return ok, err
}

// IsLocked reports whether any owner holds the lock.
func (m *Mutex) IsLocked(ctx context.Context) (bool, error) {
	st, err := m.state(ctx)
	return st.Held, err
}

// HoldCount returns how many times this handle holds the lock (0: not held),
// as Redis sees it.
func (m *Mutex) HoldCount(ctx context.Context) (int64, error) {
	st, err := m.state(ctx)
	if err != nil || st.Owner != m.lock.Owner {
		return 0, err
	}
	return st.Count, nil
}

// Holder returns who holds the lock; ok is false when it is free.
func (m *Mutex) Holder(ctx context.Context) (h redcoord.Holder, ok bool, err error) {
	st, err := m.state(ctx)
	if err != nil || !st.Held {
		return redcoord.Holder{}, false, err
	}
	return hold.Holder(st), true, nil
}

// Token returns the fencing token of the handle's current hold, 0 when it
// holds none. Tokens strictly increase across all holders of a name: pass
// the token to a store that rejects writes with a token lower than the
// highest it has seen, and a holder paused past its lease cannot overwrite
// its successor's work.
func (m *Mutex) Token() uint64 { return m.hold.Token() }

// Lost returns a channel that is closed when the handle's most recent hold
// is found gone: its lease expired or it was deleted while the handle held
// it. It stays open when the hold is released by Unlock. Take it after Lock
// returns; before the first hold it never closes.
func (m *Mutex) Lost() <-chan struct{} { return m.hold.Lost() }

func (m *Mutex) state(ctx context.Context) (scripts.State, error) {
	if err := m.check(ctx); err != nil {
		return scripts.State{}, err
	}
	return m.lock.State(ctx, m.s.RDB)
}

func (m *Mutex) check(ctx context.Context) error {
	if m.err != nil {
		return m.err
	}
	return m.s.Check(ctx)
}

func (m *Mutex) nextRequest() string {
	return m.lock.Owner + ":" + strconv.FormatUint(m.req.Add(1), 10)
}

// noCopy lets go vet's copylocks check report copies of a Mutex.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}
