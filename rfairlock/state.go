package rfairlock

import (
	"context"
	"strconv"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/hold"
	"github.com/redcoord/redcoord/scripts"
)

// IsLocked reports whether any owner holds the lock.
func (m *Mutex) IsLocked(ctx context.Context) (bool, error) {
	st, err := m.state(ctx)
	return st.Held, err
}

// HoldCount returns how many times this handle holds the lock (0: not held),
// as Redis sees it.
func (m *Mutex) HoldCount(ctx context.Context) (int64, error) {
	st, err := m.state(ctx)
	if err != nil || st.Owner != m.fair.Owner {
		return 0, err
	}
	return st.Count, nil
}

// Holder returns who holds the lock; ok is false when it is free.
func (m *Mutex) Holder(ctx context.Context) (h redcoord.Holder, ok bool, err error) {
	st, err := m.state(ctx)
	if err != nil || !st.Held {
		return redcoord.Holder{}, false, err
	}
	return hold.Holder(st), true, nil
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
// holds none. Tokens strictly increase across all holders of a name: pass
// the token to a store that rejects writes with a token lower than the
// highest it has seen, and a holder paused past its lease cannot overwrite
// its successor's work.
func (m *Mutex) Token() uint64 { return m.hold.Token() }

// Lost returns a channel that is closed when the handle's most recent hold
// is found gone: its lease expired or it was deleted while the handle held
// it. It stays open when the hold is released by Unlock. Take it after Lock
// returns; before the first hold it never closes.
func (m *Mutex) Lost() <-chan struct{} { return m.hold.Lost() }

func (m *Mutex) state(ctx context.Context) (scripts.State, error) {
	if err := m.check(ctx); err != nil {
		return scripts.State{}, err
	}
	return m.fair.State(ctx, m.s.RDB)
}

func (m *Mutex) queue(ctx context.Context) (scripts.Queue, error) {
	if err := m.check(ctx); err != nil {
		return scripts.Queue{}, err
	}
	return m.fair.QueueState(ctx, m.s.RDB)
}

func (m *Mutex) check(ctx context.Context) error {
	if m.err != nil {
		return m.err
	}
	return m.s.Check(ctx)
}

func (m *Mutex) nextRequest() string {
	return m.fair.Owner + ":" + strconv.FormatUint(m.req.Add(1), 10)
}

// noCopy lets go vet's copylocks check report copies of a Mutex.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}
