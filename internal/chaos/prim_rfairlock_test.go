package chaos

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/redcoord/redcoord/rfairlock"
)

// rfairlock: FIFO mutexes with hand-off inside the release script, on two
// names.
type rfairlockPrim struct{}

func (rfairlockPrim) caps() caps { return rlockPrim{}.caps() }

func (rfairlockPrim) setup(context.Context, *world) error { return nil }

func (rfairlockPrim) handle(w *world, p, _ int, r *rand.Rand) handle {
	name := pick(r, w.names[:2]...)
	return &rfairHandle{m: rfairlock.New(w.procs[p].clients[0], name), name: name}
}

type rfairHandle struct {
	unsupported
	m    *rfairlock.Mutex
	name string
}

func (h *rfairHandle) names() []string { return []string{h.name} }

func (h *rfairHandle) acquire(ctx context.Context, a acq) (bool, error) {
	return lockWith(ctx, a, h.m.Lock, h.m.TryLock, h.m.LockWithLease, h.m.TryLockWithLease)
}

func (h *rfairHandle) held(bool) hold {
	return hold{tokens: map[string]uint64{h.name: h.m.Token()}, lost: h.m.Lost()}
}

func (h *rfairHandle) release(ctx context.Context, _ bool) error { return h.m.Unlock(ctx) }
func (h *rfairHandle) extend(ctx context.Context, d time.Duration, _ bool) error {
	return h.m.Extend(ctx, d)
}
func (h *rfairHandle) force(ctx context.Context) (bool, error) { return h.m.ForceUnlock(ctx) }
func (h *rfairHandle) forget(ctx context.Context) error {
	_, err := h.m.Forget(ctx)
	return err
}
func (h *rfairHandle) context(p context.Context, _ bool) (context.Context, context.CancelFunc) {
	return h.m.Context(p)
}

func (h *rfairHandle) holds(bool) bool { return h.m.Token() != 0 }

func (h *rfairHandle) redisCount(ctx context.Context) (int64, error) { return h.m.HoldCount(ctx) }
