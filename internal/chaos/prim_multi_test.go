package chaos

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/rlock"
)

// multi: MultiMutexes over two of three names each, so that name sets
// overlap.
type multiPrim struct{}

func (multiPrim) caps() caps {
	return caps{servers: 1, capacity: 1, reentrant: true, lease: true, fenced: true, context: true}
}

func (multiPrim) setup(context.Context, *world) error { return nil }

func (multiPrim) handle(w *world, p, _ int, r *rand.Rand) handle {
	skip := r.IntN(3)
	var names []string
	for i, n := range w.names[:3] {
		if i != skip {
			names = append(names, n)
		}
	}
	return &multiHandle{m: rlock.NewMulti(w.procs[p].clients[0], names), ns: names}
}

type multiHandle struct {
	unsupported
	m  *rlock.MultiMutex
	ns []string
	n  atomic.Int64 // acquires not yet released: Unlock owes them, lost or not
}

func (h *multiHandle) names() []string { return h.ns }

func (h *multiHandle) acquire(ctx context.Context, a acq) (bool, error) {
	ok, err := lockWith(ctx, a, h.m.Lock, h.m.TryLock, h.m.LockWithLease, h.m.TryLockWithLease)
	if ok {
		h.n.Add(1)
	}
	return ok, err
}

func (h *multiHandle) held(bool) hold { return hold{tokens: h.m.Tokens(), lost: h.m.Lost()} }

func (h *multiHandle) release(ctx context.Context, _ bool) error {
	err := h.m.Unlock(ctx)
	switch {
	case err == nil && h.n.Load() > 0:
		h.n.Add(-1)
	case errors.Is(err, redcoord.ErrNotHeld): // ErrLeaseLost too: the rest was released
		h.n.Store(0)
	}
	return err
}

// keepsAfterLoss: a MultiMutex whose Lost closed still holds, and has the
// watchdog renew, the names it did not lose until Unlock (see
// MultiMutex.Unlock), so its Unlock is still owed.
func (h *multiHandle) keepsAfterLoss() bool {
	select {
	case <-h.m.Lost():
		return h.n.Load() > 0
	default:
		return false
	}
}
func (h *multiHandle) extend(ctx context.Context, d time.Duration, _ bool) error {
	return h.m.Extend(ctx, d)
}
func (h *multiHandle) context(p context.Context, _ bool) (context.Context, context.CancelFunc) {
	return h.m.Context(p)
}

func (h *multiHandle) holds(bool) bool { return h.m.Tokens() != nil }
