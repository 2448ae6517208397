package chaos

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/redcoord/redcoord/rlock"
)

// redlock: RedLocks over n independent servers (3 or 5), one name. Each
// process has one Client per server, all behind the process's faults.
type redlockPrim struct{ n int }

func (p redlockPrim) caps() caps {
	return caps{servers: p.n, capacity: 1, lease: true, fenced: true, context: true}
}

func (redlockPrim) setup(context.Context, *world) error { return nil }

func (redlockPrim) handle(w *world, p, _ int, _ *rand.Rand) handle {
	return &redlockHandle{l: rlock.NewRedLock(w.procs[p].clients, w.names[0]), name: w.names[0]}
}

type redlockHandle struct {
	unsupported
	l    *rlock.RedLock
	name string
}

func (h *redlockHandle) names() []string { return []string{h.name} }

func (h *redlockHandle) acquire(ctx context.Context, a acq) (bool, error) {
	return lockWith(ctx, a, h.l.Lock, h.l.TryLock, h.l.LockWithLease, h.l.TryLockWithLease)
}

func (h *redlockHandle) held(bool) hold {
	return hold{tokens: map[string]uint64{h.name: h.l.Token()}, lost: h.l.Lost()}
}

func (h *redlockHandle) release(ctx context.Context, _ bool) error { return h.l.Unlock(ctx) }
func (h *redlockHandle) extend(ctx context.Context, d time.Duration, _ bool) error {
	return h.l.Extend(ctx, d)
}
func (h *redlockHandle) context(p context.Context, _ bool) (context.Context, context.CancelFunc) {
	return h.l.Context(p)
}
