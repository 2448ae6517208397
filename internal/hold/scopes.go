package hold

import (
	"context"
	"sync"
)

// Scopes is the set of contexts scoped to one hold (Context on a lock, a
// permit, a leadership), cancelled together when the hold ends. Its zero
// value is an empty set. The owner guards it with its own mutex, held
// across Add and End; Add takes that mutex again to drop a context that
// ends first.
type Scopes struct {
	m map[*context.Context]scope
}

// scope is one context of the set: its cancel, and what names the hold in
// its cause.
type scope struct {
	cancel context.CancelCauseFunc
	what   string
}

// Add returns a copy of parent in the set, which End cancels; what names
// the hold in the cause End gives it. The caller holds mu.
func (s *Scopes) Add(parent context.Context, mu *sync.Mutex, what string) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	if s.m == nil {
		s.m = make(map[*context.Context]scope)
	}
	key := &ctx
	s.m[key] = scope{cancel, what}
	context.AfterFunc(ctx, func() {
		mu.Lock()
		delete(s.m, key)
		mu.Unlock()
	})
	return ctx, func() { cancel(context.Canceled) }
}

// End cancels every context of the set with cause(what) and empties it.
// The caller holds the set's mutex.
func (s *Scopes) End(cause func(what string) error) {
	for key, sc := range s.m {
		sc.cancel(cause(sc.what))
		delete(s.m, key)
	}
}

// Ended returns a copy of parent cancelled at once with cause: the scope
// of a hold that is not there.
func Ended(parent context.Context, cause error) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	cancel(cause)
	return ctx, func() { cancel(context.Canceled) }
}
