package relection

import (
	"context"
	"sync"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/hold"
)

// term is one leadership of a handle, and the contexts (Context) that end
// with it.
type term struct {
	token uint64

	mu     sync.Mutex
	cause  error         // why the term ended; nil while it lasts
	ended  chan struct{} // closed when it ends
	scoped hold.Scopes   // the live contexts of the term
}

func newTerm(token uint64) *term {
	return &term{token: token, ended: make(chan struct{})}
}

// watch ends the term when the lead is lost (lost closes) or the Client
// closes (done closes, or closed reports an error: its Close ends the
// lead's hold, closing lost, before done), whichever is first, unless
// Resign ended it before. It is the term's one goroutine, and returns when
// the term ends.
func (t *term) watch(lost, done <-chan struct{}, closed func() error, name string) {
	select {
	case <-lost:
		if closed() == nil {
			t.end(lostCause(name))
			return
		}
	case <-done:
	case <-t.ended:
		return
	}
	t.end(&errs.Error{Sentinel: errs.ErrClosed, Kind: kind, Name: name, Detail: "the lead is no longer kept"})
}

// end ends the term with cause, cancelling its contexts before it returns;
// the first cause stays.
func (t *term) end(cause error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cause != nil {
		return
	}
	t.cause = cause
	close(t.ended)
	t.scoped.End(func(string) error { return cause })
}

// context returns a copy of parent that ends with the term: cancelled with
// the term's cause, at once if it has ended.
func (t *term) context(parent context.Context, name string) (context.Context, context.CancelFunc) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cause != nil {
		return hold.Ended(parent, t.cause)
	}
	return t.scoped.Add(parent, &t.mu, name)
}

// lostCause is the cause of a term that ended by loss.
func lostCause(name string) error {
	return &errs.Error{Sentinel: errs.ErrLeaseLost, Kind: kind, Name: name, Detail: "the lead was lost"}
}
