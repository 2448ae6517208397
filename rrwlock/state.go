package rrwlock

import (
	"context"
	"time"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/hold"
)

// Mode is what a read-write lock is held for.
type Mode int

const (
	Free  Mode = iota // nobody holds it
	Read              // readers hold it
	Write             // a writer holds it (and perhaps reads too: a downgrade)
)

func (m Mode) String() string {
	switch m {
	case Read:
		return "read"
	case Write:
		return "write"
	}
	return "free"
}

// State is a snapshot of a read-write lock.
type State struct {
	Mode           Mode
	Writer         redcoord.Holder // the write hold; zero unless Mode is Write
	Readers        []Reader        // every owner's read holds
	WaitingWriters int             // live writers waiting; while > 0, new readers wait
	LastToken      uint64          // the last fencing token handed out: what a read hold reports
}

// Reader is one handle's read holds.
type Reader struct {
	Owner     string
	Count     int64
	Remaining time.Duration // of its lease
	Value     string        // what the handle says it is (WithValue), "" if nothing
}

// State reads who holds the lock and how many writers wait.
func (m *RWMutex) State(ctx context.Context) (State, error) {
	if err := m.h.Check(ctx); err != nil {
		return State{}, m.named(err)
	}
	st, err := m.rw.State(ctx, m.h.S.RDB)
	if err != nil {
		return State{}, m.named(err)
	}
	out := State{WaitingWriters: int(st.WaitingWriters), LastToken: st.LastToken}
	for _, r := range st.Readers {
		out.Readers = append(out.Readers, Reader{Owner: r.Owner, Count: r.Count, Remaining: r.Remaining, Value: r.Value})
	}
	switch {
	case st.Writer.Held:
		out.Mode, out.Writer = Write, hold.Holder(st.Writer)
	case len(out.Readers) > 0:
		out.Mode = Read
	}
	return out, nil
}

// Token returns the fencing token of the handle's write hold, 0 when it holds
// none. Every fresh write hold gets a new token, strictly increasing across
// all holders of a name.
func (m *RWMutex) Token() uint64 { return m.h.Hold.Token() }

// RToken returns the token of the last write before the handle's read hold
// was taken (0: none ever, or no read hold): which version the reader saw;
// or, after a ForceUnlock, the token it took (see
// Fencing tokens in the package documentation).
func (m *RWMutex) RToken() uint64 { return m.read.Token() }

// Lost returns a channel closed when the handle's most recent write hold is
// found gone (its lease expired, or ForceUnlock); it stays open when the hold
// is released by Unlock.
func (m *RWMutex) Lost() <-chan struct{} { return m.h.Hold.Lost() }

// RLost is Lost for the handle's most recent read hold.
func (m *RWMutex) RLost() <-chan struct{} { return m.read.Lost() }

// Context returns a copy of parent that is cancelled when the handle's
// current write hold ends, and through which a Lock re-enters it (and an
// RLock downgrades): see Context at redcoord.Locker.
func (m *RWMutex) Context(parent context.Context) (context.Context, context.CancelFunc) {
	return m.h.Hold.Context(parent, m.h.Named("write lock"))
}

// RContext is Context for the handle's read hold: cancelled when it is
// lost, or released by the RUnlock that drops the last one.
func (m *RWMutex) RContext(parent context.Context) (context.Context, context.CancelFunc) {
	return m.read.Context(parent, m.h.Named("read lock"))
}

// noCopy lets go vet's copylocks check report copies of an RWMutex.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}
