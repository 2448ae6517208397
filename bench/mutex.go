package main

import (
	"context"
	"sync"
	"time"
)

// take is one acquisition a worker is about to make: how it takes the lock
// and releases it, and whether it is a read (shared) or a write.
type take struct {
	shared       bool
	lock, unlock func(context.Context) error
}

// drive runs one cell: each worker w takes what next[w] returns, holds it
// for cfg.hold and releases it, again and again until cfg.duration passes or
// ctx is done, with r watching. A take cut short by the end of the cell is
// neither an acquisition nor an error, but its wait counts. drive returns
// when every worker has stopped, with the cell's length and its cost read
// as it ended, before the cancelled waits' leave scripts.
func drive(ctx context.Context, f *fleet, cfg *config, r *recorder, next []func() take) (time.Duration, cost) {
	cctx, cancel := context.WithDeadline(ctx, r.end)
	defer cancel()
	var wg sync.WaitGroup
	for w, pick := range next {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for cctx.Err() == nil {
				t := pick()
				r.wait(w, t.shared)
				if err := t.lock(cctx); err != nil {
					if cctx.Err() != nil {
						err = nil
					}
					r.failed(w, err)
					continue
				}
				if cctx.Err() != nil { // the cell ended as the take returned
					r.failed(w, nil)
				} else {
					r.acquired(w)
					sleep(cctx, cfg.hold)
					r.releasing(w)
				}
				uctx, ucancel := unlockCtx()
				if err := t.unlock(uctx); err != nil {
					r.releaseFailed(err)
				}
				ucancel()
			}
		}()
	}
	<-cctx.Done()
	elapsed := time.Since(r.start)
	c := f.cost()
	wg.Wait()
	return elapsed, c
}

// runMutex runs one cell of the mutex scenario: every worker locks, holds
// and unlocks its handle until cfg.duration passes or ctx is done; two
// workers inside one name at once is a violation.
func runMutex(ctx context.Context, f *fleet, cfg *config, ct contender) mutexRow {
	r := newRecorder(len(f.locks), f.names, 1, cfg.duration)
	elapsed, c := drive(ctx, f, cfg, r, exclusive(f.locks))
	return mutexRow{
		common: r.common(ct.name, elapsed, c),
		GapP50: ms(r.gaps, 50) * 1000,
		Gaps:   r.gaps.TotalCount(),
		FIFO:   r.fifo,
		ME:     r.me,
	}
}

// exclusive returns each worker's take when every acquisition is a write:
// Lock and Unlock of its handle.
func exclusive(locks []locker) []func() take {
	next := make([]func() take, len(locks))
	for w, lk := range locks {
		t := take{lock: lk.Lock, unlock: lk.Unlock}
		next[w] = func() take { return t }
	}
	return next
}

// sleep holds for d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
