package rsemaphore

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/acquire"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/hold"
	"github.com/redcoord/redcoord/internal/scripts"
)

// handle is what both semaphores are made of: the Base every handle has
// (the Session, the name, the request sequence) and the options. Base.Key
// names the semaphore's parts; those a lock of the same name also has (a
// queue, alive, waiting, leases, fence and a channel) are parts of their
// own (core.KeySemQueue, ...), so that a lock and a semaphore of one name
// are two objects that never touch.
type handle struct {
	hold.Base
	opts options
}

// init checks c, name and opts and applies opts. It does no I/O.
func (h *handle) init(c *redcoord.Client, name string, opts []Option) {
	if h.Init(c, name) {
		h.Err = core.ApplyOptions(&h.opts, opts)
	}
}

// channel returns the semaphore's notification channel.
func (h *handle) channel() string { return h.Key(core.ChanSem) }

// clientChannel returns the Client's channel for the semaphore, where its
// waiters are woken.
func (h *handle) clientChannel() string { return h.S.KeyTail(h.Name, core.ChanSemClient, h.S.ID) }

// marks returns how long the semaphore's request markers live: long enough
// for a request's retries, the WAIT after each (redcoord.WithWaitReplicas)
// and the leave after a failed wait with its own WAIT.
func (h *handle) marks() time.Duration {
	return scripts.RequestTTL + 2*h.S.Config.Replicas.Timeout
}

// wait returns the acquire loop's configuration.
func (h *handle) wait() acquire.Config { return h.S.Wait(h.opts.maxPoll) }

// explain says how to set the permits in an ErrNotSet.
func (h *handle) explain(err error) error {
	if err == errs.ErrNotSet {
		return errs.New(errs.ErrNotSet, "its permits were never set: call TrySetPermits, SetPermits or AddPermits first")
	}
	return err
}

// untilSet runs acquire, and with WithWaitForSet, while it finds the
// permits never set, waits for them to be set (see waitSet) and runs it
// again.
func (h *handle) untilSet(ctx context.Context, state func(context.Context) (bool, error), acquire func() error) error {
	for {
		err := acquire()
		if !h.opts.waitForSet || !errors.Is(err, errs.ErrNotSet) {
			return err
		}
		if err := h.waitSet(ctx, state); err != nil {
			return err
		}
	}
}

// setID is the id the waits for permits to be set listen with on the
// semaphore's channel, where the set scripts publish "@set " when they set
// permits where none were.
const setID = "set"

// waitSet blocks until state reports the permits set, or ctx is done (an
// error matching ErrNotAcquired and ctx.Err()). It listens on the
// semaphore's channel: the set that sets the permits wakes it, and the
// poll interval bounds what a lost message costs.
func (h *handle) waitSet(ctx context.Context, state func(context.Context) (bool, error)) error {
	try := func(ctx context.Context, _ acquire.Wake) (struct{}, acquire.Attempt, error) {
		set, err := state(ctx)
		return struct{}{}, acquire.Attempt{Acquired: set}, err
	}
	spec := acquire.Spec{Kind: kind, Name: h.Name, Channel: h.channel(), Mode: acquire.Broadcast, ID: setID}
	_, err := acquire.Acquire(ctx, h.wait(), spec, acquire.Funcs[struct{}]{TryFunc: try}) // it leaves nothing to undo
	return err
}

// checkCount reports a permit count below 1 or above MaxPermits.
func checkCount(arg string, n int64) error {
	switch {
	case n < 1:
		return errs.Invalid(arg, "must be at least 1, got %d", n)
	case n > MaxPermits:
		return errs.Invalid(arg, "must be at most %d (2^53-1), got %d", int64(MaxPermits), n)
	}
	return nil
}

// MaxPermits is the largest number of permits a semaphore counts, and the
// largest a call may ask for, release or add: 2^53-1, the largest integer
// that Redis's Lua holds exactly.
const MaxPermits = 1<<53 - 1

// setter is the set script of either semaphore.
type setter func(ctx context.Context, rdb redis.Scripter, req, mode string, n int64) (scripts.SetResult, error)

// trySet, set and add are TrySetPermits, SetPermits and AddPermits for both
// semaphores.
func (h *handle) trySet(ctx context.Context, run setter, n int64) (bool, error) {
	if err := h.Check(ctx); err != nil {
		return false, err
	}
	if err := checkCount("n", n); err != nil {
		return false, err
	}
	r, err := run(ctx, h.S.RDB, h.NextRequest(), scripts.SetIfUnset, n)
	return r.Changed, err
}

func (h *handle) set(ctx context.Context, run setter, n int64) error {
	if err := h.Check(ctx); err != nil {
		return err
	}
	if err := checkCount("n", n); err != nil {
		return err
	}
	_, err := run(ctx, h.S.RDB, h.NextRequest(), scripts.SetTotal, n)
	return err
}

func (h *handle) add(ctx context.Context, run setter, delta int64) error {
	if err := h.Check(ctx); err != nil {
		return err
	}
	if delta == 0 || delta < -MaxPermits || delta > MaxPermits {
		return errs.Invalid("delta", "must not be 0 and at most %d (2^53-1) either way, got %d", int64(MaxPermits), delta)
	}
	_, err := run(ctx, h.S.RDB, h.NextRequest(), scripts.AddTotal, delta)
	return err
}
