package core

import (
	"sync"
	"time"

	"github.com/redcoord/redcoord/internal/lease"
)

// Waits counts a Client's blocked acquires per waiter registry (rlock's,
// rrwlock's writers' and the unfair semaphore's, one per name), so that
// they share one registration: the Client is registered by its id, once,
// while any of them waits, and one heartbeat keeps that registration
// alive. Its zero value is ready to use.
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
	// sizes counts the acquires in flight by the permits each asks for
	// (EnterSized); guarded by w.mu.
	sizes map[int64]int
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

// Polling records that a try took the Client out of the registry while
// acquires still wait, their waits polling (they cannot hear a wake): the
// heartbeat stops until a try registers the Client again.
func (wt *Wait) Polling() {
	wt.w.mu.Lock()
	defer wt.w.mu.Unlock()
	wt.registered = false
	if wt.beat != nil {
		wt.beat.Stop()
		wt.beat = nil
	}
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

// Sized is one blocked acquire of n permits among its Client's waits on a
// registry (a semaphore's): the registration says the fewest permits
// they ask for, so that a release wakes the Client only when one fits.
type Sized struct {
	*Wait
	n int64
}

// EnterSized counts one more blocked acquire, of n permits, on the
// registry key.
func (w *Waits) EnterSized(key string, n int64) Sized {
	wt := w.Enter(key)
	w.mu.Lock()
	defer w.mu.Unlock()
	if wt.sizes == nil {
		wt.sizes = make(map[int64]int)
	}
	wt.sizes[n]++
	return Sized{Wait: wt, n: n}
}

// Least returns the fewest permits the Client's other blocked acquires
// on the registry ask for; 0 when there are none.
func (s Sized) Least() int64 {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	least := int64(0)
	for n, k := range s.sizes {
		if n == s.n {
			k-- // the caller's own
		}
		if k > 0 && (least == 0 || n < least) {
			least = n
		}
	}
	return least
}

// Exit counts the acquire out, as Wait.Exit does, and reports whether
// others remain. The last one, when a try had registered the Client (its
// heartbeat ran) and this acquire's own try or leave did not take the
// registration away (dropped), calls drop to take it away: a try of
// another acquire that answered later may have left it behind. The
// Client's waits are held meanwhile, so that a new acquire's try cannot
// register in between and have its registration dropped; this happens
// only when two acquires' tries crossed.
func (s Sized) Exit(dropped bool, drop func()) (others bool) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	if s.sizes[s.n]--; s.sizes[s.n] <= 0 {
		delete(s.sizes, s.n)
	}
	wt := s.Wait
	wt.n--
	if wt.n > 0 {
		return true
	}
	delete(wt.w.m, wt.key)
	if wt.beat != nil {
		wt.beat.Stop()
		wt.beat = nil
		if !dropped {
			drop()
		}
	}
	return false
}
