package rfairlock

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/hold"
	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/scripts"
	"github.com/redcoord/redcoord/internal/wait"
)

const kind = "rfairlock"

// Mutex is a handle on a reentrant, first-come-first-served lock named in
// Redis. The handle is the owner: locking it again re-enters, another handle
// queues. It is safe for concurrent use, but goroutines sharing one handle
// share its hold, so give each goroutine that must exclude the others its
// own handle.
//
// A Mutex must not be copied after first use.
type Mutex struct {
	_ noCopy

	h    *hold.Handle
	fair scripts.Fair // h.Lock and the queue's keys; zero when h.Err is set
	ch   string       // the Client's channel for the name, where grants to its waiters arrive
}

// New returns a handle on the fair lock named name. It does no I/O; a bad
// name or option is reported by every method of the handle, as
// ErrInvalidArgument.
func New(c *redcoord.Client, name string, opts ...Option) *Mutex {
	h := hold.NewHandle(c, name, kind, opts)
	m := &Mutex{h: h}
	if h.Err == nil {
		m.fair = scripts.Fair{Lock: h.Lock,
			Queue: h.Key("queue"), Alive: h.Key("alive"), Waiting: h.Key("waiting")}.Prepared(h.S.Config.TTL)
		m.ch = h.S.ClientChannel(name)
	}
	return m
}

// Name returns the lock's name.
func (m *Mutex) Name() string { return m.h.Name }

// Owner returns the handle's owner id, as Holder reports it.
func (m *Mutex) Owner() string { return m.h.Lock.Owner }

// Lock blocks until it holds the lock or ctx is done. Waiters are served in
// the order they first asked, across processes. The hold's lease is the
// Client's lease TTL, renewed by the watchdog until Unlock. Locking a handle
// that holds the lock re-enters it at once, without queueing. A wait that
// ends returns an error matching both ErrNotAcquired and ctx.Err(); it
// leaves the queue, or passes on a grant that raced in.
func (m *Mutex) Lock(ctx context.Context) error {
	return m.acquire(ctx, 0, true)
}

// LockWithLease is Lock with a fixed lease that the watchdog does not renew:
// the hold ends at Unlock or when lease runs out, whichever is first; Lost
// is closed then. A lease granted by a release runs from the grant. A
// re-entry keeps the first hold's lease. lease must be at least 1ms.
func (m *Mutex) LockWithLease(ctx context.Context, lease time.Duration) error {
	if err := core.CheckLease("lease", lease); err != nil {
		return err
	}
	return m.acquire(ctx, lease, true)
}

// TryLock makes one attempt, in one round trip, and never waits or queues:
// it takes the lock only if it is free and nobody is queued for it (or
// re-enters it), and reports whether the handle now holds it. A busy lock
// is (false, nil); a failure is (false, err).
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	return hold.Tried(m.acquire(ctx, 0, false))
}

func (m *Mutex) acquire(ctx context.Context, fixed time.Duration, block bool) error {
	h := m.h
	if err := h.CheckAcquire(ctx); err != nil {
		return err
	}
	a := &attempt{m: m, op: h.Hold.Op(), req: h.NextRequest(), lease: h.LeaseArg(fixed), block: block}
	defer a.op.Stop()
	defer a.stopHeartbeat()
	spec := wait.Spec{Channel: m.ch, ID: a.req, Once: !block}
	got, err := wait.Acquire(ctx, h.S.Wait(h.MaxPoll), spec, a)
	if err != nil {
		return err
	}
	a.stopHeartbeat()
	return h.Took(ctx, got, fixed, a)
}

// attempt is one acquire's tries, and the undo of its request.
type attempt struct {
	m     *Mutex
	op    *hold.Op
	req   string
	lease scripts.Lease
	block bool            // queue when the lock is busy (Lock, not TryLock)
	hb    *hold.Heartbeat // the queue entry's heartbeat, made when a try first queues req
	sent  time.Time       // when the last try that did not acquire was sent,
	at    int64           // and the server's clock (ms) when it ran
}

// Try makes one attempt in the handle's turn, which an acquiring try keeps
// until the hold is recorded. It returns what an acquiring try got: the
// hold, and no later than when it was taken, by the local clock.
func (a *attempt) Try(ctx context.Context, wake string) (got hold.Got, att wait.Attempt, err error) {
	m, h := a.m, a.m.h
	held, err := a.op.Start(ctx)
	if err != nil {
		return got, wait.Attempt{}, err
	}
	defer func() {
		if err != nil || !att.Acquired {
			a.op.Stop()
		}
	}()
	if token, grantedAt, ok := scripts.ParseGrant(wake); ok {
		// The release script made req the holder, after the last try ran.
		ok, err := a.granted(ctx)
		if err != nil {
			return got, wait.Attempt{}, err
		}
		if ok {
			got = hold.Got{Acquired: scripts.Acquired{OK: true, Token: token, Count: 1}, Since: dated(a.sent, a.at, grantedAt)}
			return got, wait.Attempt{Acquired: true}, nil
		}
		// The grant is gone already (its lease ran out, or ForceUnlock): try.
	}
	ttl := h.S.Config.TTL
	now := time.Now()
	r, err := m.fair.Acquire(ctx, h.S.Writer(), a.req, held.Arg, a.lease, a.block, ttl)
	// A fresh hold is 0 old. An older first hold was granted by a release
	// (or taken by this request, its reply lost): this try wrote nothing
	// for its WAIT to cover, and granted confirms it.
	regrant := r.OK && r.Count == 1 && r.Age > 0
	if err = core.AcquireErr(r.OK && !regrant, err); err != nil { // a shortfall is undone by Leave
		return got, wait.Attempt{}, err
	}
	if r.OK {
		ok := true
		if regrant {
			ok, err = a.granted(ctx)
		}
		if err != nil || !ok { // !ok: the grant is gone already; try again soon
			return got, wait.Attempt{Hint: time.Millisecond}, err
		}
		// A grant found by a re-check is r.Age old.
		return hold.Got{Acquired: r.Acquired, Since: now.Add(-r.Age)}, wait.Attempt{Acquired: true}, nil
	}
	a.sent, a.at = now, r.Now
	if a.block {
		if a.hb == nil {
			script, keys, args := m.fair.Heartbeat(a.req, ttl)
			a.hb = hold.NewHeartbeat(h.S.Watchdog, lease.Renewal{Script: script, Keys: keys, Args: args})
		}
		if err := a.hb.Watch(now); err != nil {
			return got, wait.Attempt{}, err
		}
	}
	return got, wait.Attempt{Hint: r.Wait}, nil
}

// granted confirms a grant that a release made to req (see
// core.Session.Confirm): with WithWaitReplicas, one round trip more, a
// write of ours with WAIT; without, nothing. It reports whether the grant
// still stands: the hold's last request is req.
func (a *attempt) granted(ctx context.Context) (bool, error) {
	return a.m.h.S.Confirm(ctx, func(ctx context.Context, w redis.Scripter) (bool, error) {
		return scripts.Touch(ctx, w, a.m.fair.Lock.Lock, "r", a.req)
	})
}

// Leave leaves the queue, or gives back what the request took or was
// granted.
func (a *attempt) Leave(ctx context.Context) error {
	a.stopHeartbeat()
	_, err := a.m.fair.Leave(ctx, a.m.h.S.RDB, a.req)
	return err
}

// stopHeartbeat ends the queue entry's heartbeat, if one was started.
func (a *attempt) stopHeartbeat() {
	if a.hb != nil {
		a.hb.Stop()
	}
}

// dated returns the earliest local time at which a grant made at server
// time grantedAt can have happened, given that a try sent at sent ran at
// server time tryAt; the grant's lease runs from then. Dating it from sent
// alone would be safe too, but a waiter re-checks only every poll interval
// (or less often, up to the blocker's lease), and a fixed lease dated that
// early could be reported lost at once. Should the server's clock step,
// the result stays between sent and now.
func dated(sent time.Time, tryAt, grantedAt int64) time.Time {
	if grantedAt <= tryAt {
		return sent
	}
	t := sent.Add(time.Duration(grantedAt-tryAt) * time.Millisecond)
	if now := time.Now(); now.Before(t) {
		return now
	}
	return t
}

// Unlock releases one hold. The last one hands the lock to the first live
// waiter inside the same script, so the next holder needs no further round
// trip. A handle that does not hold the lock gets ErrNotHeld, and Redis is
// left unchanged. Once Lost has closed, Unlock returns ErrLeaseLost
// (matching ErrNotHeld too), deleting what Redis may still have of the hold.
// An Unlock that go-redis retries after a lost reply is applied once. If
// Unlock fails for another reason, the hold is still renewed while Redis
// has it, and reported lost once it is gone.
func (m *Mutex) Unlock(ctx context.Context) error {
	return m.h.Unlock(ctx, m.fair.Release)
}

// ForceUnlock deletes the lock whoever holds it, hands it to the first live
// waiter, and reports whether it was held. The holder's handle sees Lost
// closed at its next renewal (at once if it is this handle); its Unlock
// returns ErrLeaseLost.
func (m *Mutex) ForceUnlock(ctx context.Context) (bool, error) {
	return m.h.ForceUnlock(ctx, m.fair.Force)
}
