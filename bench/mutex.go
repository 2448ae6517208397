package main

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
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
			lctx := context.WithValue(cctx, waitKey{}, waitMark{r, w})
			for cctx.Err() == nil {
				t := pick()
				r.wait(w, t.shared)
				if err := t.lock(lctx); err != nil {
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
		common: r.common(ct.name, len(f.procs), elapsed, c),
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

// waitKey is the context key of a worker's waitMark: Lock's context
// carries it to the go-redis hook of the worker's Client (replyHook).
type waitKey struct{}

// waitMark says whose wait a command belongs to.
type waitMark struct {
	r *recorder
	w int
}

// replyHook is a go-redis hook that tells a cell's recorder when a
// worker's command got its reply (recorder.replied), so that FIFO is judged
// in the order Redis saw the waiters. Commands whose context carries no
// waitMark pass through, and so do those that set up a new connection
// (HELLO, AUTH, CLIENT SETINFO...), which go-redis sends with the context
// of the command that needed the connection, before that command, and
// those that failed without a reply from Redis (a cancelled context, a
// broken connection): they may never have reached it.
type replyHook struct{}

func (replyHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (replyHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if m, ok := ctx.Value(waitKey{}).(waitMark); ok && answered(err) && !setup(cmd) {
			m.r.replied(m.w)
		}
		return err
	}
}

func (replyHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if m, ok := ctx.Value(waitKey{}).(waitMark); ok && answered(err) && !slices.ContainsFunc(cmds, setup) {
			m.r.replied(m.w)
		}
		return err
	}
}

// answered reports whether a command that returned err got a reply from
// Redis: none, nil (a missing key), or an error reply.
func answered(err error) bool {
	var reply redis.Error
	return err == nil || err == redis.Nil || errors.As(err, &reply)
}

// setup reports whether cmd is one that sets up a connection.
func setup(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "auth", "client", "select", "readonly":
		return true
	}
	return false
}
