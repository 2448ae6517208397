package core

import (
	"sync"
	"time"

	"github.com/redcoord/redcoord/internal/lease"
)

// Waits counts a Client's blocked acquires per waiter registry (rlock's
// and rrwlock's writers', one per name), so that they share one
// registration: the Client is
// registered by its id, once, while any of them waits, and one heartbeat
// keeps that registration alive. Its zero value is ready to use.
type Waits struct {
	mu sync.Mutex
	m  map[string]*Wait
}

// Wait is a Client's blocked acquires on one registry.
type Wait struct {
	w    *Waits
	key  string
	n    int              // acquires in flight; guarded by w.mu
	beat *lease.Heartbeat // the registration's, once a try registered it; guarded by w.mu
	// registered: a try registered the Client, and no try or leave of
	// its has dropped the registration since; guarded by w.mu.
	registered bool
}

// Enter counts one more blocked acquire on the registry key.
func (w *Waits) Enter(key string) *Wait {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = make(map[string]*Wait)
	}
	wt := w.m[key]
	if wt == nil {
		wt = &Wait{w: w, key: key}
		w.m[key] = wt
	}
	wt.n++
	return wt
}

// Others reports whether other acquires of the Client wait on the
// registry besides the caller's.
func (wt *Wait) Others() bool {
	wt.w.mu.Lock()
	defer wt.w.mu.Unlock()
	return wt.n > 1
}

// Exit counts one blocked acquire less and reports whether others remain.
// The last one stops the registration's heartbeat; stale says the
// registration may outlive it (a try registered the Client and nothing
// dropped it since: its other waiters left meanwhile).
func (wt *Wait) Exit() (others, stale bool) {
	wt.w.mu.Lock()
	defer wt.w.mu.Unlock()
	wt.n--
	if wt.n > 0 {
		return true, false
	}
	delete(wt.w.m, wt.key)
	if wt.beat != nil {
		wt.beat.Stop()
		wt.beat = nil
	}
	return false, wt.registered
}

// Dropped records that a try or leave dropped the Client's registration.
func (wt *Wait) Dropped() {
	wt.w.mu.Lock()
	defer wt.w.mu.Unlock()
	wt.registered = false
}

// Waiting reports whether acquires of the Client wait on the registry key.
func (w *Waits) Waiting(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.m[key] != nil
}

// Registered records that a try sent at since registered the Client:
// the heartbeat (made by beat the first time) renews the registration
// from then on, while acquires wait.
func (wt *Wait) Registered(since time.Time, beat func() *lease.Heartbeat) error {
	wt.w.mu.Lock()
	defer wt.w.mu.Unlock()
	if wt.n == 0 {
		return nil
	}
	wt.registered = true
	if wt.beat == nil {
		wt.beat = beat()
	}
	return wt.beat.Watch(since)
}
