package chaos

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/redcoord/redcoord/rlock"
)

// rlock: reentrant unfair mutexes on two names, so that handles contend.
type rlockPrim struct{}

func (rlockPrim) caps() caps {
	return caps{servers: 1, capacity: 1, reentrant: true, lease: true, force: true, forget: true, fenced: true, context: true}
}

func (rlockPrim) setup(context.Context, *world) error { return nil }

func (rlockPrim) handle(w *world, p, _ int, r *rand.Rand) handle {
	name := pick(r, w.names[:2]...)
	return &rlockHandle{m: rlock.New(w.procs[p].clients[0], name), name: name}
}

type rlockHandle struct {
	unsupported
	m    *rlock.Mutex
	name string
}

func (h *rlockHandle) names() []string { return []string{h.name} }

func (h *rlockHandle) acquire(ctx context.Context, a acq) (bool, error) {
	return lockWith(ctx, a, h.m.Lock, h.m.TryLock, h.m.LockWithLease, h.m.TryLockWithLease)
}

func (h *rlockHandle) held(bool) hold {
	return hold{tokens: map[string]uint64{h.name: h.m.Token()}, lost: h.m.Lost()}
}

func (h *rlockHandle) release(ctx context.Context, _ bool) error { return h.m.Unlock(ctx) }
func (h *rlockHandle) extend(ctx context.Context, d time.Duration, _ bool) error {
	return h.m.Extend(ctx, d)
}
func (h *rlockHandle) force(ctx context.Context) (bool, error) { return h.m.ForceUnlock(ctx) }
func (h *rlockHandle) forget(ctx context.Context) error {
	_, err := h.m.Forget(ctx)
	return err
}
func (h *rlockHandle) context(p context.Context, _ bool) (context.Context, context.CancelFunc) {
	return h.m.Context(p)
}

// lockWith calls the one of a lock's four acquires that a asks for.
func lockWith(ctx context.Context, a acq,
	lock func(context.Context) error,
	try func(context.Context) (bool, error),
	lockLease func(context.Context, time.Duration) error,
	tryLease func(context.Context, time.Duration) (bool, error),
) (bool, error) {
	switch {
	case a.try && a.lease > 0:
		return tryLease(ctx, a.lease)
	case a.try:
		return try(ctx)
	case a.lease > 0:
		err := lockLease(ctx, a.lease)
		return err == nil, err
	}
	err := lock(ctx)
	return err == nil, err
}

func (h *rlockHandle) holds(bool) bool { return h.m.Token() != 0 }

func (h *rlockHandle) redisCount(ctx context.Context) (int64, error) { return h.m.HoldCount(ctx) }
