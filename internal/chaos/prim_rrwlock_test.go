package chaos

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/redcoord/redcoord/rrwlock"
)

// rrwlock: writers against writers and readers, on one name. A handle holds
// a read hold or a write hold, never both (no downgrades are drawn).
type rrwlockPrim struct{}

func (rrwlockPrim) caps() caps {
	c := rlockPrim{}.caps()
	c.read = true
	return c
}

func (rrwlockPrim) setup(context.Context, *world) error { return nil }

func (rrwlockPrim) handle(w *world, p, _ int, _ *rand.Rand) handle {
	return &rwHandle{m: rrwlock.New(w.procs[p].clients[0], w.names[0]), name: w.names[0]}
}

type rwHandle struct {
	unsupported
	m    *rrwlock.RWMutex
	name string
}

func (h *rwHandle) names() []string { return []string{h.name} }

func (h *rwHandle) acquire(ctx context.Context, a acq) (bool, error) {
	if a.read {
		return lockWith(ctx, a, h.m.RLock, h.m.TryRLock, h.m.RLockWithLease, h.m.TryRLockWithLease)
	}
	return lockWith(ctx, a, h.m.Lock, h.m.TryLock, h.m.LockWithLease, h.m.TryLockWithLease)
}

func (h *rwHandle) held(read bool) hold {
	if read {
		return hold{tokens: map[string]uint64{h.name: h.m.RToken()}, lost: h.m.RLost()}
	}
	return hold{tokens: map[string]uint64{h.name: h.m.Token()}, lost: h.m.Lost()}
}

func (h *rwHandle) release(ctx context.Context, read bool) error {
	if read {
		return h.m.RUnlock(ctx)
	}
	return h.m.Unlock(ctx)
}

func (h *rwHandle) extend(ctx context.Context, d time.Duration, read bool) error {
	if read {
		return h.m.RExtend(ctx, d)
	}
	return h.m.Extend(ctx, d)
}

func (h *rwHandle) force(ctx context.Context) (bool, error) { return h.m.ForceUnlock(ctx) }
func (h *rwHandle) forget(ctx context.Context) error {
	_, err := h.m.Forget(ctx)
	return err
}
func (h *rwHandle) context(p context.Context, read bool) (context.Context, context.CancelFunc) {
	if read {
		return h.m.RContext(p)
	}
	return h.m.Context(p)
}
