package rfairlock

import (
	"context"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/scripts"
)

// IsLocked reports whether any owner holds the lock.
func (m *Mutex) IsLocked(ctx context.Context) (bool, error) {
	ok, err := m.q.H.IsLocked(ctx)
	return ok, m.named(err)
}

// HoldCount returns how many times this handle holds the lock (0: not held),
// as Redis sees it.
func (m *Mutex) HoldCount(ctx context.Context) (int64, error) {
	n, err := m.q.H.HoldCount(ctx)
	return n, m.named(err)
}

// Holder returns who holds the lock; ok is false when it is free.
func (m *Mutex) Holder(ctx context.Context) (h redcoord.Holder, ok bool, err error) {
	h, ok, err = m.q.H.Holder(ctx)
	return h, ok, m.named(err)
}

// QueueLength returns how many requests wait for the lock: those whose
// heartbeat is alive, whoever made them.
func (m *Mutex) QueueLength(ctx context.Context) (int, error) {
	q, err := m.queue(ctx)
	return int(q.Len), m.named(err)
}

// Position returns the place in the queue of this handle's earliest waiting
// Lock, counting live waiters from 1 (the next to be served), or 0 when the
// handle does not wait.
func (m *Mutex) Position(ctx context.Context) (int, error) {
	q, err := m.queue(ctx)
	return int(q.Position), m.named(err)
}

// Token returns the fencing token of the handle's current hold, 0 when it
// holds none: see Token at redcoord.Locker.
func (m *Mutex) Token() uint64 { return m.q.H.Hold.Token() }

// Lost returns a channel closed when the handle's most recent hold is
// found gone: see Lost at redcoord.Locker.
func (m *Mutex) Lost() <-chan struct{} { return m.q.H.Hold.Lost() }

func (m *Mutex) queue(ctx context.Context) (scripts.Queue, error) {
	if err := m.q.H.Check(ctx); err != nil {
		return scripts.Queue{}, err
	}
	return m.q.Lock.QueueState(ctx, m.q.H.S.RDB)
}

// Context returns a copy of parent that is cancelled when the handle's
// current hold ends, and through which a Lock re-enters it: see Context at
// redcoord.Locker.
func (m *Mutex) Context(parent context.Context) (context.Context, context.CancelFunc) {
	return m.q.H.Hold.Context(parent, m.q.H.Named(""))
}

// named names the lock in err, after the sentinel's words (see errs.About).
func (m *Mutex) named(err error) error { return errs.About(kind, m.q.H.Name, err) }

// noCopy lets go vet's copylocks check report copies of a Mutex.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}
