package core

import (
	"context"
	"time"

	"github.com/redcoord/redcoord/internal/acquire"
	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/scripts"
)

// Registrant is what a ClientWaiter needs of its primitive.
type Registrant interface {
	// Beat makes the heartbeat of the Client's registration.
	Beat() *lease.Heartbeat
	// Drop takes the Client out of the registry, in one round trip.
	Drop(ctx context.Context)
}

// Weight is what a blocked acquire asks for among its Client's waiters,
// and how it takes part in their registration, which is a lock's or a
// semaphore's:
//
//	               OneHold (a lock)                Permits(n) (a semaphore)
//	counted in     once a try finds the lock busy  at once
//	Least          1 while others wait             the fewest permits others ask for
//	leave          counts the acquire out, and     sent again until it lands: the
//	               new acquires wait for the last  acquire counts out at Exit, which
//	               one's (see Leaving)             wakes a waiter whose registration
//	                                               the leave may have taken
//
// A lock's acquire counts in lazily so that an uncontended Lock counts
// nothing. A lock's leave is one round trip, which new acquires can wait
// for; a semaphore's is sent again while its connection fails (it may
// give back permits), for seconds, which must not hold up the Client's
// other acquires of the name.
type Weight struct {
	n    int64
	lock bool
}

// OneHold is the weight of a lock's acquire.
func OneHold() Weight { return Weight{n: 1, lock: true} }

// Permits is the weight of a semaphore's acquire of n permits.
func Permits(n int64) Weight { return Weight{n: n} }

// ClientWaiter is one blocked acquire's part in its Client's registration
// in a waiter registry (see ClientWaits). A try that takes the primitive
// drops the registration when no other waiter of the Client remains, and
// keeps it otherwise; a leave likewise. Its methods but Least accept a nil
// ClientWaiter: an acquire that never registers (a TryLock, a fair
// semaphore's acquire, or one of a Client whose waits poll).
type ClientWaiter struct {
	s      *Session
	key    string // the waiter registry
	ch     string // the Client's channel for the name, where its waiters are woken
	weight Weight
	r      Registrant
	reg    *registration // nil until the acquire is counted in
	left   bool          // counted out already, by Leaving
	last   bool          // Leaving counted out the Client's last waiter on key: Exit ends its drop
	// dropped: the last try or leave sent dropped the Client's
	// registration (no other waiter of the Client then).
	dropped bool
}

// EnterClientWaiter makes an acquire's part in its Client's waits on
// registry, woken on channel ch, of the given weight; r makes the
// registration's heartbeat when a try first registers the Client, and
// drops the registration when it outlives every waiter of the Client. It
// returns nil when the Client's waits are not woken by pub/sub (they
// poll, and never register). The acquire is counted in at once, but for
// OneHold: then only when other waiters of the Client wait on registry,
// or on ch (it may join them without a try: see Counted), and otherwise
// when a try of its finds the lock busy or keeps the registration (see
// Sent). Either way it first waits for a drop of the Client's
// registration in flight (see ClientWaits), which its first try must not
// precede. The ClientWaiter is into, which the caller keeps (a field of
// its attempt, so that the acquire allocates nothing for it):
// EnterClientWaiter returns into, or nil. If ctx ends first it returns an
// error matching both errs.ErrNotAcquired and ctx.Err(), and counts
// nothing.
func EnterClientWaiter(ctx context.Context, into *ClientWaiter, s *Session, registry, ch string, weight Weight,
	r Registrant) (*ClientWaiter, error) {
	if !s.Woken() {
		return nil, nil
	}
	*into = ClientWaiter{s: s, key: registry, ch: ch, weight: weight, r: r}
	reg, err := s.ClientWaits.enter(ctx, registry, weight.n, weight.lock)
	if err == nil && reg == nil {
		if hb, herr := s.Hub(); herr == nil && hb != nil && hb.Waiters(ch) > 0 {
			reg, err = s.ClientWaits.enter(ctx, registry, weight.n, false)
		}
	}
	if err != nil {
		return nil, err
	}
	into.reg = reg
	return into, nil
}

// Counted reports whether the acquire is counted among its Client's
// waiters already: only then may it join them without a try (acquire.Spec's
// Behind), so that a try that takes the lock sees it and keeps the
// registration, or wakes it.
func (c *ClientWaiter) Counted() bool { return c != nil && c.reg != nil }

// Least returns the fewest permits the Client's other waiters on the
// registry ask for (1 for a lock's); 0 when there are none.
func (c *ClientWaiter) Least() int64 {
	c.s.ClientWaits.mu.Lock()
	defer c.s.ClientWaits.mu.Unlock()
	return c.least()
}

// least is Least, with mu held. An acquire not counted in yet (OneHold)
// has every waiter counted in as another.
func (c *ClientWaiter) least() int64 {
	reg, own := c.reg, c.weight.n
	if reg == nil || c.left {
		reg, own = c.s.ClientWaits.m[c.key], 0
	}
	if reg == nil {
		return 0
	}
	least := int64(0)
	for n, k := range reg.weights {
		if n == own {
			k-- // the caller's own
		}
		if k > 0 && (least == 0 || n < least) {
			least = n
		}
	}
	return least
}

// Mode returns the registry mode of the next try, woken by w.
func (c *ClientWaiter) Mode(w acquire.Wake) scripts.Registry {
	reg, _ := c.ModeBehind(w)
	return reg
}

// ModeBehind is Mode and, for Keep, the fewest permits the Client's other
// waiters ask for, which a semaphore's registration says from then on (0
// otherwise): both read at once.
func (c *ClientWaiter) ModeBehind(w acquire.Wake) (scripts.Registry, int64) {
	switch {
	case c == nil:
		return scripts.NoRegistry, 0
	case w.Polling:
		// Its wait cannot hear a wake: a registration would only spend a
		// release's wake, so the one an earlier try made goes.
		return scripts.Unregister, 0
	}
	if least := c.Least(); least > 0 {
		return scripts.Keep, least
	}
	return scripts.Register, 0
}

// Sent records the reply of a try sent at sent with mode reg: acquired
// is whether it took the primitive. A try that registered the Client
// starts or renews the registration's heartbeat; one that unregistered it
// (a polling wait) stops the heartbeat until a try registers the Client
// again. An acquire not counted in yet is counted in now, unless its try
// took the lock alone, waiting as EnterClientWaiter does with ctx.
func (c *ClientWaiter) Sent(ctx context.Context, reg scripts.Registry, sent time.Time, acquired bool) error {
	if c == nil {
		return nil
	}
	c.dropped = acquired && reg == scripts.Register
	if c.reg == nil && !c.dropped {
		r, err := c.s.ClientWaits.enter(ctx, c.key, c.weight.n, false)
		if err != nil {
			return err
		}
		c.reg = r
	}
	w := &c.s.ClientWaits
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case reg == scripts.Keep || (reg == scripts.Register && !acquired):
		if len(c.reg.weights) == 0 {
			return nil
		}
		c.reg.registered = true
		if c.reg.beat == nil {
			c.reg.beat = c.r.Beat()
		}
		return c.reg.beat.Watch(sent)
	case reg == scripts.Unregister:
		// Its waits poll (they cannot hear a wake) until a try registers
		// the Client again.
		c.reg.registered = false
		c.reg.stopBeat()
	case c.dropped && c.reg != nil && c.weight.lock:
		// A lock's try that took the lock alone dropped the registration.
		// A semaphore's keeps the flag: another waiter's Keep, read before
		// this reply, may have registered the Client again, and its last
		// waiter drops what may remain (see exit).
		c.reg.registered = false
	}
	return nil
}

// Leaving is called before the acquire's leave script, and returns the
// fewest permits the Client's other waiters ask for, which the leave
// keeps the registration for: 0 when none remain, and the leave takes the
// Client out of the registry. A lock's acquire (OneHold) is counted out
// here, and the last one's leave is a drop that Exit ends: new acquires
// on the registry wait for it meanwhile (see ClientWaits). A nil
// ClientWaiter, whose acquire never registered, returns
// scripts.SemUnregistered (-1): its leave leaves the registry be.
func (c *ClientWaiter) Leaving() (others int64) {
	if c == nil {
		return scripts.SemUnregistered
	}
	w := &c.s.ClientWaits
	w.mu.Lock()
	defer w.mu.Unlock()
	others = c.least()
	c.dropped = others == 0
	switch {
	case c.reg == nil || c.left:
	case c.weight.lock:
		c.left = true
		if c.reg.countOut(c.weight.n) {
			c.reg.leaving = make(chan struct{})
			c.last = true
		}
	case c.dropped:
		c.reg.registered = false
	}
	return others
}

// Exit ends the acquire's part in its Client's waits on the registry. The
// last waiter drops a registration that outlives it (a try kept it for
// waiters that left meanwhile), or ends the drop its leave made (see
// Leaving); a new acquire of the Client on the registry waits for either
// drop (see ClientWaits). When the registration was dropped while other
// waiters of the Client came in (they joined without a try), it wakes the
// longest-waiting of them, whose try registers the Client again.
func (c *ClientWaiter) Exit() {
	if c == nil {
		return
	}
	switch {
	case c.reg != nil && !c.left:
		c.exit()
	case c.last:
		c.s.ClientWaits.endDrop(c.key, c.reg)
	}
	if !c.dropped || !c.s.ClientWaits.Waiting(c.key) {
		return
	}
	if hb, err := c.s.Hub(); err == nil && hb != nil {
		hb.WakeOne(c.ch)
	}
}

// exit counts the acquire out, for Exit; the last one stops the
// registration's heartbeat, and drops the registration if a try
// registered the Client and nothing dropped it since.
func (c *ClientWaiter) exit() {
	w, reg := &c.s.ClientWaits, c.reg
	w.mu.Lock()
	last := reg.countOut(c.weight.n)
	// A semaphore's waiter whose own try or leave dropped the registration
	// has nothing of its own to drop.
	stale := last && reg.registered && (c.weight.lock || !c.dropped)
	if stale {
		reg.leaving = make(chan struct{})
	} else if last {
		delete(w.m, c.key)
	}
	w.mu.Unlock()
	if stale {
		defer w.endDrop(c.key, reg)
		c.drop()
	}
}

// drop takes the Client's registration away, for exit, bounded by
// acquire.LeaveTimeout.
func (c *ClientWaiter) drop() {
	ctx, cancel := context.WithTimeout(context.Background(), acquire.LeaveTimeout)
	defer cancel()
	c.r.Drop(ctx)
	c.dropped = true
}
