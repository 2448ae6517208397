package main

import (
	"context"

	"github.com/redcoord/redcoord/rsemaphore"
)

// semLockNames are the semaphore scenario's contenders, in the order they
// run: the unfair semaphore, the baseline, then the fair one and the
// expirable one.
var semLockNames = []string{"rsemaphore", "rsemaphore-fair", "rsemaphore-expirable"}

// semContenders returns the semaphore scenario's contenders.
func semContenders(cfg *config) []contender { return named(cfg, semLockNames) }

// semLock is a worker's handle on a semaphore, as a locker: Lock takes one
// permit, Unlock gives one back.
type semLock struct {
	s       *rsemaphore.Semaphore
	permits int64 // the total, set by prepare
}

func (l semLock) Lock(ctx context.Context) error   { return l.s.Acquire(ctx, 1) }
func (l semLock) Unlock(ctx context.Context) error { return l.s.Release(ctx, 1) }

// prepare sets the semaphore's total, before anyone acquires.
func (l semLock) prepare(ctx context.Context) error { return l.s.SetPermits(ctx, l.permits) }

// xsemLock is a worker's handle on an expirable semaphore, as a locker:
// Lock takes a permit, kept by the Client's watchdog, and Unlock releases
// it. A worker's Lock and Unlock alternate, so it keeps one permit at most.
type xsemLock struct {
	s       *rsemaphore.ExpirableSemaphore
	permits int64 // the total, set by prepare
	held    rsemaphore.Permit
}

func (l *xsemLock) Lock(ctx context.Context) (err error) {
	l.held, err = l.s.Acquire(ctx, rsemaphore.AcquireOptions{})
	return err
}

func (l *xsemLock) Unlock(ctx context.Context) error { return l.s.Release(ctx, l.held) }

// prepare sets the semaphore's total, before anyone acquires.
func (l *xsemLock) prepare(ctx context.Context) error { return l.s.SetPermits(ctx, l.permits) }

// runSemaphore runs one cell of the semaphore scenario: every worker takes
// one permit of its name's semaphore, holds it and gives it back until
// cfg.duration passes or ctx is done; more than cfg.permits workers inside
// one semaphore at once is a violation.
func runSemaphore(ctx context.Context, f *fleet, cfg *config, ct contender) semRow {
	r := newRecorder(len(f.locks), f.names, cfg.permits, cfg.duration)
	elapsed, c := drive(ctx, f, cfg, r, exclusive(f.locks))
	return semRow{
		Permits:   cfg.permits,
		common:    r.common(ct.name, len(f.procs), elapsed, c),
		MaxInside: r.maxInside,
		FIFO:      r.fifo,
		OverLimit: r.me,
	}
}
