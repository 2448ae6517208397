package hub

import "time"

// topic is the Hub's state for one channel. All fields are guarded by Hub.mu.
type topic struct {
	name string
	// waiters in wake order: the one that has gone longest without a
	// wake-one first. A waiter woken by "1" or "n:K" moves to the back.
	waiters []*Subscription
	// pending counts SUBSCRIBE commands written but not yet confirmed. A
	// topic without waiters stays in Hub.topics until it is 0, so that a late
	// confirmation is not taken for the confirmation of a newer SUBSCRIBE.
	pending   int
	confirmed bool          // the latest SUBSCRIBE has been confirmed
	ready     chan struct{} // closed when it is; replaced by each SUBSCRIBE
	// lingering: the last waiter left, and the channel stays subscribed
	// until lingerEnd, when the timer linger ends it (see WithLinger); a
	// waiter that comes back first takes it over.
	lingering bool
	lingerEnd time.Time
	linger    *time.Timer // reused from one linger to the next
	// pinned: the channel stays subscribed for the Hub's life, with or
	// without waiters (see Pin).
	pinned bool
	// heard is the Hub's handled count at the channel's last confirmation,
	// on the connection of reconnects count heardOn (see Heard).
	heard, heardOn int64

	// Sharded pub/sub (see shard.go).
	node  *node  // the connection subscribed on; nil while moving or refused
	gen   uint64 // changes with every SSUBSCRIBE or move: older replies are stale
	moved bool   // wake every waiter when the next SSUBSCRIBE is confirmed
	from  string // while moved: the node it was subscribed on before
	err   error  // the server refused SSUBSCRIBE: the waiters poll
}

func (t *topic) markConfirmed() {
	if !t.confirmed {
		t.confirmed = true
		close(t.ready)
	}
}

// wakeAll wakes every waiter, dated at (see Subscription.wake).
func (t *topic) wakeAll(at int64) {
	for _, s := range t.waiters {
		s.wake(at)
	}
}

// counted returns how many waiters t has, Pin's subscription not counted.
func (t *topic) counted() int {
	n := len(t.waiters)
	for _, s := range t.waiters {
		if s.pinned {
			n--
		}
	}
	return n
}

// unwoken is the number of t's waiters, not counting Pin's, that have no
// pending wake: those the next wake-one message can wake.
func (t *topic) unwoken() int {
	n := 0
	for _, s := range t.waiters {
		if !s.pinned && len(s.c) == 0 {
			n++
		}
	}
	return n
}

// wakeN wakes waiters that have no pending wake, longest-waiting first,
// while their weights fit in n, and moves them to the back of the order: n
// waiters of weight 1, or fewer heavier ones. A waiter too heavy for what is
// left is skipped, not waited for: a lighter one behind it may fit. Waiters
// that already have a pending wake are skipped too: waking them again would
// coalesce into nothing. When none fits (n >= 1), the longest-waiting one
// without a pending wake is woken all the same: the sender judged that a
// waiter here fits by what it last heard of them (a semaphore's Client
// registration says the fewest its waiters ask for), which may be out of
// date, and the waiter learns by trying, which tells the sender again.
func (t *topic) wakeN(n, at int64) {
	if !t.wake(n, true, at) && n >= 1 {
		t.wake(1, false, at)
	}
}

// wakeOne wakes the longest-waiting waiter that has no pending wake,
// whatever its weight.
func (t *topic) wakeOne(at int64) { t.wake(1, false, at) }

// wake wakes waiters without a pending wake while their weights fit in
// n; unweighed, every waiter weighs 1. Their wakes are dated at (see
// Subscription.wake). It reports whether it woke one.
func (t *topic) wake(n int64, weighed bool, at int64) bool {
	var woken []*Subscription
	kept := 0
	for _, s := range t.waiters {
		w := int64(1)
		if weighed {
			w = s.weight
		}
		if w <= n && s.wake(at) {
			n -= w
			woken = append(woken, s)
			continue
		}
		t.waiters[kept] = s // kept <= the index being read, so nothing is lost
		kept++
	}
	copy(t.waiters[kept:], woken)
	return len(woken) > 0
}
