package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
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

// semaphore: a Semaphore of semPermits permits without leases. Client.Close
// is not drawn: permits without a lease never come back from a closed
// process. When fair, every handle is WithFair (fair and unfair waiters do
// not share a name: see Fairness in package rsemaphore), and each process's
// first handle asks for every permit at once, so that a request too large
// for what is left heads the queue while others come and go.
type semPrim struct{ fair bool }

func (semPrim) caps() caps { return caps{servers: 1, capacity: semPermits, noClose: true} }

func (semPrim) setup(ctx context.Context, w *world) error {
	return rsemaphore.New(w.procs[0].clients[0], w.names[0]).SetPermits(ctx, semPermits)
}

func (sp semPrim) handle(w *world, p, i int, _ *rand.Rand) handle {
	h := &semHandle{name: w.names[0], n: 1}
	var opts []rsemaphore.Option
	if sp.fair {
		opts = append(opts, rsemaphore.WithFair())
		if i == 0 {
			h.n = semPermits
		}
	}
	h.s = rsemaphore.New(w.procs[p].clients[0], w.names[0], opts...)
	return h
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
	n      int64   // the permits each acquire asks for, and its Release gives back
	failed []int64 // Releases that failed, by permits: each may have left them taken
}

func (h *semHandle) names() []string { return []string{h.name} }

func (h *semHandle) asks() int { return int(h.n) }

func (h *semHandle) acquire(ctx context.Context, a acq) (bool, error) {
	if a.try {
		return h.s.TryAcquire(ctx, h.n)
	}
	err := h.s.Acquire(ctx, h.n)
	return err == nil, err
}

func (h *semHandle) held(bool) hold { return hold{permits: int(h.n)} }

func (h *semHandle) release(ctx context.Context, _ bool) error {
	err := h.s.Release(ctx, h.n)
	if err != nil {
		h.failed = append(h.failed, h.n)
	}
	return err
}

func (h *semHandle) failedReleases() []int64 { return h.failed }

// retryRelease sends again a Release of n permits of h's that failed: a
// Semaphore's permits have neither owner nor lease, so those whose Release
// failed stay taken (see "Releases" in package redcoord) until their
// holder releases them again. ErrNotHeld says the first try was applied
// after all (see retryReleases in quiet_test.go).
func (h *semHandle) retryRelease(ctx context.Context, n int64) error {
	if i := slices.Index(h.failed, n); i >= 0 {
		h.failed = slices.Delete(h.failed, i, i+1)
	}
	if err := h.s.Release(ctx, n); err != nil && !errors.Is(err, redcoord.ErrNotHeld) {
		return err
	}
	return nil
}
