package core

import (
	"context"
	"sync"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/lease"
)

// ClientWaits are a Client's blocked acquires per waiter registry (rlock's,
// rrwlock's writers', each semaphore's; one registry per name), each a
// ClientWaiter. They share one registration: the Client is registered by
// its id, once, while any of them waits; one heartbeat keeps that
// registration alive; a release wakes the Client, on its channel for the
// name, where its longest-waiting waiter, or those that fit the permits
// freed, try. Its zero value is ready to use.
//
// The last waiter to leave a registry may have to take the registration
// away (a try kept it for waiters that left meanwhile, or a lock's leave
// script unregisters the Client: see Weight). That drop is a round trip,
// made without mu held: a slow one (an outage, a slow link) holds up no
// acquire on another registry. Meanwhile the registry's record stays in
// m, leaving, and a new acquire on the same registry waits for the drop
// to end before its try may register the Client: were the try to reach
// Redis first, the drop would take its registration away, and a release
// would find nobody to wake.
type ClientWaits struct {
	mu sync.Mutex
	m  map[string]*registration // guarded by mu
}

// registration is the Client's registration in one waiter registry, and
// its waiters there. Guarded by ClientWaits.mu.
type registration struct {
	// weights counts the waiters counted in by their weight.
	weights map[int64]int
	beat    *lease.Heartbeat // the registration's, once a try registered it
	// registered: a try registered the Client, and no try or leave of its
	// waiters has dropped the registration since.
	registered bool
	// leaving is closed when the last waiter's drop of the registration
	// ends (see Leaving and Exit); nil unless one is in flight.
	leaving chan struct{}
}

// enter counts a waiter of weight n in on key, after a drop of the
// Client's registration there in flight has ended; with join, only where
// other waiters of the Client are counted, and otherwise it returns nil.
// It waits for the drop with mu released, which the drop's own timeout
// bounds as well as ctx.
func (w *ClientWaits) enter(ctx context.Context, key string, n int64, join bool) (*registration, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		reg := w.m[key]
		if reg == nil || reg.leaving == nil {
			break
		}
		done := reg.leaving
		w.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			w.mu.Lock()
			return nil, errs.Both(errs.ErrNotAcquired, ctx.Err())
		}
		w.mu.Lock()
	}
	reg := w.m[key]
	if reg == nil {
		if join {
			return nil, nil
		}
		if w.m == nil {
			w.m = make(map[string]*registration)
		}
		reg = &registration{weights: make(map[int64]int)}
		w.m[key] = reg
	}
	reg.weights[n]++
	return reg, nil
}

// Waiting reports whether waiters of the Client are counted in on the
// registry key.
func (w *ClientWaits) Waiting(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	reg := w.m[key]
	return reg != nil && len(reg.weights) > 0
}

// endDrop ends the last waiter's drop of reg, the Client's registration
// on key: new acquires on key go on.
func (w *ClientWaits) endDrop(key string, reg *registration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	close(reg.leaving)
	reg.leaving = nil
	if w.m[key] == reg {
		delete(w.m, key)
	}
}

// countOut counts a waiter of weight n out, with mu held, and reports
// whether it was the last; the last stops the heartbeat.
func (r *registration) countOut(n int64) (last bool) {
	if r.weights[n]--; r.weights[n] <= 0 {
		delete(r.weights, n)
	}
	if len(r.weights) > 0 {
		return false
	}
	r.stopBeat()
	return true
}

// stopBeat stops the registration's heartbeat, with mu held; the next
// registering try makes a new one.
func (r *registration) stopBeat() {
	if r.beat != nil {
		r.beat.Stop()
		r.beat = nil
	}
}
