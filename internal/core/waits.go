package core

import (
	"context"
	"sync"
	"time"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/lease"
)

// Waits counts a Client's blocked acquires per waiter registry (rlock's,
// rrwlock's writers' and the unfair semaphore's, one per name), so that
// they share one registration: the Client is registered by its id, once,
// while any of them waits, and one heartbeat keeps that registration
// alive. Its zero value is ready to use.
//
// The last acquire to leave a registry may have to take the Client's
// registration away (a try kept it for acquires that left meanwhile, or a
// leave script unregisters the Client). That drop is a round trip, made
// without mu held: a slow one (an outage, a slow link) holds up no
// acquire on another registry. Meanwhile the registry's Wait stays in m,
// dropping, and a new acquire on the same registry waits for the drop to
// end (Enter, Join) before its try may register the Client: were the
// try to reach Redis first, the drop would take its registration away,
// and a release would find nobody to wake.
type Waits struct {
	mu sync.Mutex
	m  map[string]*Wait // guarded by mu
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
	// dropping is closed when the last acquire's drop of the
	// registration ends (see Leave); nil unless one is in flight.
	// Guarded by w.mu.
	dropping chan struct{}
}

// Enter counts one more blocked acquire on the registry key. When the
// last acquire of the Client on key is dropping the Client's
// registration, Enter waits for that drop to end first, so that the new
// acquire's tries reach Redis after it. If ctx ends first it returns an
// error matching both errs.ErrNotAcquired and ctx.Err(), and counts
// nothing.
func (w *Waits) Enter(ctx context.Context, key string) (*Wait, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.enter(ctx, key)
}

// enter is Enter, with w.mu held.
func (w *Waits) enter(ctx context.Context, key string) (*Wait, error) {
	if err := w.settle(ctx, key); err != nil {
		return nil, err
	}
	if w.m == nil {
		w.m = make(map[string]*Wait)
	}
	wt := w.m[key]
	if wt == nil {
		wt = &Wait{w: w, key: key}
		w.m[key] = wt
	}
	wt.n++
	return wt, nil
}

// Join counts one more blocked acquire on the registry key when other
// acquires of the Client wait on it, and returns nil otherwise: an
// acquire that counts itself only once a try of its finds the lock busy.
// Either way it first waits, as Enter does, for a drop of the Client's
// registration in flight, which that try must not precede. Its error is
// Enter's.
func (w *Waits) Join(ctx context.Context, key string) (*Wait, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.settle(ctx, key); err != nil {
		return nil, err
	}
	wt := w.m[key]
	if wt == nil {
		return nil, nil
	}
	wt.n++
	return wt, nil
}

// settle waits, with w.mu held, until no drop of the Client's
// registration on the registry key is in flight; it releases w.mu while
// it waits, which the drop's own timeout bounds as well as ctx.
func (w *Waits) settle(ctx context.Context, key string) error {
	for {
		wt := w.m[key]
		if wt == nil || wt.dropping == nil {
			return nil
		}
		done := wt.dropping
		w.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			w.mu.Lock()
			return errs.Both(errs.ErrNotAcquired, ctx.Err())
		}
		w.mu.Lock()
	}
}

// Others reports whether other acquires of the Client wait on the
// registry besides the caller's.
func (wt *Wait) Others() bool {
	wt.w.mu.Lock()
	defer wt.w.mu.Unlock()
	return wt.n > 1
}

// Waiting reports whether acquires of the Client wait on the registry key.
func (w *Waits) Waiting(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	wt := w.m[key]
	return wt != nil && wt.n > 0
}

// Exit counts one blocked acquire less and reports whether others remain.
// The last one stops the registration's heartbeat and, when the
// registration may outlive it (a try registered the Client and nothing
// dropped it since: its other acquires left meanwhile), calls drop to
// take it away, a round trip made as Waits describes. drop is nil when
// the acquire's own try or leave took the registration away.
func (wt *Wait) Exit(drop func()) (others bool) {
	return wt.exit(0, drop)
}

// exit is Exit for an acquire of size permits (0: not sized).
func (wt *Wait) exit(size int64, drop func()) bool {
	wt.w.mu.Lock()
	last := wt.count(size)
	stale := last && wt.registered && drop != nil
	if stale {
		wt.dropping = make(chan struct{})
	} else if last {
		delete(wt.w.m, wt.key)
	}
	wt.w.mu.Unlock()
	if stale {
		defer wt.Left()
		drop()
	}
	return !last
}

// Leave counts one blocked acquire less, as Exit does, for an acquire
// whose leave script then takes the Client out of the registry unless
// others remain, which Leave reports. After the last one's leave, Left
// ends the drop; new acquires on the key wait for it meanwhile.
func (wt *Wait) Leave() (others bool) {
	wt.w.mu.Lock()
	defer wt.w.mu.Unlock()
	if !wt.count(0) {
		return true
	}
	wt.dropping = make(chan struct{})
	return false
}

// Left ends the drop of the last acquire's Leave: the Client's waits on
// the key are over, and new acquires on it go on.
func (wt *Wait) Left() {
	wt.w.mu.Lock()
	defer wt.w.mu.Unlock()
	close(wt.dropping)
	wt.dropping = nil
	if wt.w.m[wt.key] == wt {
		delete(wt.w.m, wt.key)
	}
}

// count counts an acquire of size permits out, with w.mu held, and
// reports whether it was the last; the last stops the heartbeat.
func (wt *Wait) count(size int64) (last bool) {
	if size > 0 {
		if wt.sizes[size]--; wt.sizes[size] <= 0 {
			delete(wt.sizes, size)
		}
	}
	if wt.n--; wt.n > 0 {
		return false
	}
	if wt.beat != nil {
		wt.beat.Stop()
		wt.beat = nil
	}
	return true
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
// registry key, as Enter does.
func (w *Waits) EnterSized(ctx context.Context, key string, n int64) (Sized, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wt, err := w.enter(ctx, key)
	if err != nil {
		return Sized{}, err
	}
	if wt.sizes == nil {
		wt.sizes = make(map[int64]int)
	}
	wt.sizes[n]++
	return Sized{Wait: wt, n: n}, nil
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

// Exit counts the acquire out, as Wait.Exit does.
func (s Sized) Exit(drop func()) (others bool) {
	return s.Wait.exit(s.n, drop)
}
