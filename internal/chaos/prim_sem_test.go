package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/rsemaphore"
)

// semPermits is the total of both semaphores' permits.
const semPermits = 2

// xsemaphore: an ExpirableSemaphore of semPermits permits, one name; a
// handle holds at most one permit at a time.
type xsemPrim struct{}

func (xsemPrim) caps() caps {
	return caps{servers: 1, capacity: semPermits, lease: true, fenced: true, context: true}
}

func (xsemPrim) setup(ctx context.Context, w *world) error {
	return rsemaphore.NewExpirable(w.procs[0].clients[0], w.names[0]).SetPermits(ctx, semPermits)
}

func (xsemPrim) handle(w *world, p, _ int, _ *rand.Rand) handle {
	return &xsemHandle{s: rsemaphore.NewExpirable(w.procs[p].clients[0], w.names[0]), name: w.names[0]}
}

func (xsemPrim) idle(ctx context.Context, w *world) []string {
	n, err := rsemaphore.NewExpirable(w.procs[0].clients[0], w.names[0]).Available(ctx)
	if err == nil && n == semPermits {
		return nil
	}
	// p0's Client may be closed: ask through a Client of a live process.
	for _, p := range w.procs {
		if !p.closed {
			n, err = rsemaphore.NewExpirable(p.clients[0], w.names[0]).Available(ctx)
			break
		}
	}
	if err != nil || n != semPermits {
		return []string{fmt.Sprintf("available permits %d (%v), want %d", n, err, semPermits)}
	}
	return nil
}

type xsemHandle struct {
	unsupported
	s    *rsemaphore.ExpirableSemaphore
	name string
	p    rsemaphore.Permit
}

func (h *xsemHandle) names() []string { return []string{h.name} }

func (h *xsemHandle) acquire(ctx context.Context, a acq) (bool, error) {
	o := rsemaphore.AcquireOptions{Lease: a.lease}
	if a.try {
		p, ok, err := h.s.TryAcquire(ctx, o)
		if ok {
			h.p = p
		}
		return ok, err
	}
	p, err := h.s.Acquire(ctx, o)
	if err == nil {
		h.p = p
	}
	return err == nil, err
}

func (h *xsemHandle) held(bool) hold {
	return hold{tokens: map[string]uint64{h.name: h.p.Token}, lost: h.p.Lost()}
}

func (h *xsemHandle) release(ctx context.Context, _ bool) error { return h.s.Release(ctx, h.p) }
func (h *xsemHandle) extend(ctx context.Context, d time.Duration, _ bool) error {
	return h.s.Extend(ctx, h.p, d)
}
func (h *xsemHandle) context(p context.Context, _ bool) (context.Context, context.CancelFunc) {
	return h.s.Context(p, h.p)
}

// semaphore: a Semaphore of semPermits permits without leases; a handle
// holds at most one. Client.Close is not drawn: permits without a lease
// never come back from a closed process.
type semPrim struct{}

func (semPrim) caps() caps { return caps{servers: 1, capacity: semPermits, noClose: true} }

func (semPrim) setup(ctx context.Context, w *world) error {
	return rsemaphore.New(w.procs[0].clients[0], w.names[0]).SetPermits(ctx, semPermits)
}

func (semPrim) handle(w *world, p, _ int, _ *rand.Rand) handle {
	return &semHandle{s: rsemaphore.New(w.procs[p].clients[0], w.names[0]), name: w.names[0]}
}

func (semPrim) idle(ctx context.Context, w *world) []string {
	n, err := rsemaphore.New(w.procs[0].clients[0], w.names[0]).Available(ctx)
	if err != nil || n != semPermits {
		return []string{fmt.Sprintf("available permits %d (%v), want %d", n, err, semPermits)}
	}
	return nil
}

type semHandle struct {
	unsupported
	s      *rsemaphore.Semaphore
	name   string
	failed int // Releases that failed: each may have left its permit taken
}

func (h *semHandle) names() []string { return []string{h.name} }

func (h *semHandle) acquire(ctx context.Context, a acq) (bool, error) {
	if a.try {
		return h.s.TryAcquire(ctx, 1)
	}
	err := h.s.Acquire(ctx, 1)
	return err == nil, err
}

func (h *semHandle) held(bool) hold { return hold{} }

func (h *semHandle) release(ctx context.Context, _ bool) error {
	err := h.s.Release(ctx, 1)
	if err != nil {
		h.failed++
	}
	return err
}

func (h *semHandle) failedReleases() int { return h.failed }

// retryReleases sends again, once every handle is idle, each Release of h
// that failed: a Semaphore's permit has neither owner nor lease, so one
// whose Release failed stays taken (see "Releases" in package redcoord)
// until its holder releases it again. With every handle idle, a Release
// whose first try was applied after all is refused with ErrNotHeld (the
// permits would exceed the total), so the retries free exactly the permits
// still taken. It returns what it could not settle.
func (h *semHandle) retryReleases(ctx context.Context) []string {
	var out []string
	for ; h.failed > 0; h.failed-- {
		if err := h.s.Release(ctx, 1); err != nil && !errors.Is(err, redcoord.ErrNotHeld) {
			out = append(out, fmt.Sprintf("a failed Release sent again failed: %v", err))
		}
	}
	return out
}
