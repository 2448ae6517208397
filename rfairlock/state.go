package rfairlock

import (
	"context"
	"strconv"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/scripts"
)

// IsLocked reports whether any owner holds the lock.
func (m *Mutex) IsLocked(ctx context.Context) (bool, error) { return m.h.IsLocked(ctx) }

// HoldCount returns how many times this handle holds the lock (0: not held),
// as Redis sees it.
func (m *Mutex) HoldCount(ctx context.Context) (int64, error) { return m.h.HoldCount(ctx) }

// Holder returns who holds the lock; ok is false when it is free.
func (m *Mutex) Holder(ctx context.Context) (h redcoord.Holder, ok bool, err error) {
	return m.h.Holder(ctx)
}

// QueueLength returns how many requests wait for the lock: those whose
// heartbeat is alive, whoever made them.
func (m *Mutex) QueueLength(ctx context.Context) (int, error) {
	q, err := m.queue(ctx)
	return int(q.Len), err
}

// Position returns the place in the queue of this handle's earliest waiting
// Lock, counting live waiters from 1 (the next to be served), or 0 when the
// handle does not wait.
func (m *Mutex) Position(ctx context.Context) (int, error) {
	q, err := m.queue(ctx)
	return int(q.Position), err
}

// Token returns the fencing token of the handle's current hold, 0 when it
// holds none: see Token at redcoord.Locker.
func (m *Mutex) Token() uint64 { return m.h.Hold.Token() }

// Lost returns a channel closed when the handle's most recent hold is
// found gone: see Lost at redcoord.Locker.
func (m *Mutex) Lost() <-chan struct{} { return m.h.Hold.Lost() }

func (m *Mutex) queue(ctx context.Context) (scripts.Queue, error) {
	if err := m.h.Check(ctx); err != nil {
		return scripts.Queue{}, err
	}
	return m.fair.QueueState(ctx, m.h.S.RDB)
}

// Context returns a copy of parent that is cancelled when the handle's
// current hold ends, and through which a Lock re-enters it: see Context at
// redcoord.Locker.
func (m *Mutex) Context(parent context.Context) (context.Context, context.CancelFunc) {
	return m.h.Hold.Context(parent, "lock "+strconv.Quote(m.h.Name))
}

// noCopy lets go vet's copylocks check report copies of a Mutex.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}
