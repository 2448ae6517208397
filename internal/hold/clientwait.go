package hold

import (
	"context"
	"time"

	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/scripts"
	"github.com/redcoord/redcoord/internal/wait"
)

// ClientWait is one blocked acquire's part in its Client's one
// registration in a waiter registry (rlock's, rrwlock's writers'): the
// Client is registered by its id, once for all its local waiters of the
// name (see core.Waits), and a release wakes its longest-waiting one. A
// try that takes the lock drops the registration when no other local
// waiter remains, and keeps it otherwise; a leave likewise. Its methods
// accept a nil ClientWait: an acquire that never registers (a TryLock, or
// a Client whose waits poll).
type ClientWait struct {
	s        *core.Session
	registry string
	ch       string     // the Client's channel for the name, where its waiters are woken
	wait     *core.Wait // nil until the acquire is counted (see EnterClientWait)
	reg      Registrant
	exited   bool // counted out of wait already (by Keep)
	last     bool // Keep counted out the Client's last acquire on the registry
	// dropped: the last try or leave sent dropped the Client's
	// registration (no other local waiter then).
	dropped bool
}

// Registrant is what a ClientWait needs of its primitive.
type Registrant interface {
	// Beat makes the heartbeat of the Client's registration.
	Beat() *lease.Heartbeat
	// Drop takes the Client out of the registry, in one round trip.
	Drop(ctx context.Context)
}

// EnterClientWait counts a blocked acquire among its Client's waiters on
// registry, woken on channel ch; r makes the registration's heartbeat
// when a try first registers the Client, and drops the registration when
// it outlives every local waiter. It returns nil when the Client's waits
// are not woken by pub/sub (they poll, and never register). The acquire
// is counted at once when other acquires of the Client wait on registry,
// or on ch (it may join them without a try: see Counted); otherwise when a
// try of its finds the lock busy, or keeps the registration, so that an
// uncontended acquire counts nothing; it waits, though, for a drop of
// the Client's registration in flight (see core.Waits), which its first
// try must not precede. The ClientWait is into, which the caller keeps (a
// field of its attempt, so that the acquire allocates nothing for it):
// EnterClientWait returns into, or nil. If ctx ends first, it returns
// core.Waits.Enter's error.
func EnterClientWait(ctx context.Context, into *ClientWait, s *core.Session, registry, ch string,
	r Registrant) (*ClientWait, error) {
	if !s.Woken() {
		return nil, nil
	}
	*into = ClientWait{s: s, registry: registry, ch: ch, reg: r}
	wt, err := s.Waits.Join(ctx, registry)
	if err != nil {
		return nil, err
	}
	if wt == nil {
		if hb, herr := s.Hub(); herr == nil && hb != nil && hb.Waiters(ch) > 0 {
			if wt, err = s.Waits.Enter(ctx, registry); err != nil {
				return nil, err
			}
		}
	}
	into.wait = wt
	return into, nil
}

// Counted reports whether the acquire is counted among its Client's
// waiters already: only then may it join them without a try (wait.Spec's
// Join), so that a try that takes the lock sees it and keeps the
// registration, or wakes it.
func (c *ClientWait) Counted() bool { return c != nil && c.wait != nil }

// others reports whether other acquires of the Client wait on the
// registry besides this one.
func (c *ClientWait) others() bool {
	if c.wait == nil {
		return c.s.Waits.Waiting(c.registry)
	}
	return c.wait.Others()
}

// Mode returns the registry mode of the next try, woken by w.
func (c *ClientWait) Mode(w wait.Wake) scripts.Registry {
	switch {
	case c == nil:
		return scripts.NoRegistry
	case w.Polling:
		// Its wait cannot hear a wake: a registration would only spend a
		// release's wake, so the one an earlier try made goes.
		return scripts.Unregister
	case c.others():
		return scripts.Keep
	}
	return scripts.Register
}

// Sent records the reply of a try sent at sent with mode reg: acquired
// is whether it took the lock. A try that registered the Client starts or
// renews the registration's heartbeat. An acquire not counted yet is
// counted now, as core.Waits.Enter does, with ctx.
func (c *ClientWait) Sent(ctx context.Context, reg scripts.Registry, sent time.Time, acquired bool) error {
	if c == nil {
		return nil
	}
	c.dropped = acquired && reg == scripts.Register
	if c.wait == nil && !c.dropped {
		w, err := c.s.Waits.Enter(ctx, c.registry)
		if err != nil {
			return err
		}
		c.wait = w
	}
	switch {
	case reg == scripts.Keep || (reg == scripts.Register && !acquired):
		return c.wait.Registered(sent, c.reg.Beat)
	case (reg == scripts.Unregister || c.dropped) && c.wait != nil:
		c.wait.Dropped()
	}
	return nil
}

// Keep counts the acquire out of its Client's waits, before its leave,
// and reports whether the leave keeps the Client's registration: other
// local waiters remain, or the acquire never registered. A leave that
// drops it is the last acquire's drop (core.Wait.Leave), which Exit ends.
func (c *ClientWait) Keep() bool {
	if c == nil {
		return true
	}
	others := c.others()
	if c.wait != nil {
		others = c.wait.Leave()
		c.exited, c.last = true, !others
	}
	c.dropped = !others
	return others
}

// Exit ends the acquire's part in the Client's waits on the name. The last
// local waiter drops a registration that outlives it (a try kept it for
// waiters that left meanwhile), or ends the drop its leave made (see
// Keep); a new acquire of the Client on the name waits for either drop
// (see core.Waits). When the registration was dropped while other local
// waiters came in (they queued without a try), it wakes the
// longest-waiting of them, whose try registers the Client again.
func (c *ClientWait) Exit() {
	if c == nil {
		return
	}
	switch {
	case c.wait != nil && !c.exited:
		c.wait.Exit(c.drop)
	case c.last:
		c.wait.Left()
	}
	if !c.dropped || !c.s.Waits.Waiting(c.registry) {
		return
	}
	if hb, err := c.s.Hub(); err == nil && hb != nil {
		hb.WakeOne(c.ch)
	}
}

// drop takes the Client's registration away, for Exit (see
// core.Wait.Exit).
func (c *ClientWait) drop() {
	ctx, cancel := context.WithTimeout(context.Background(), wait.LeaveTimeout)
	defer cancel()
	c.reg.Drop(ctx)
	c.dropped = true
}
