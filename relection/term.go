package relection

import (
	"context"
	"fmt"
	"sync"

	"github.com/redcoord/redcoord/internal/errs"
)

// term is one leadership of a handle, and the contexts (Context) that end
// with it.
type term struct {
	token uint64

	mu      sync.Mutex
	cause   error                                        // why the term ended; nil while it lasts
	ended   chan struct{}                                // closed when it ends
	cancels map[*context.Context]context.CancelCauseFunc // the live contexts of the term
}

func newTerm(token uint64) *term {
	return &term{token: token, ended: make(chan struct{}), cancels: map[*context.Context]context.CancelCauseFunc{}}
}

// watch ends the term when the lead is lost (lost closes) or the Client
// closes (done closes), whichever is first, unless Resign ended it before.
// It is the term's one goroutine, and returns when the term ends.
func (t *term) watch(lost, done <-chan struct{}, name string) {
	select {
	case <-lost:
		t.end(lostCause(name))
	case <-done:
		t.end(fmt.Errorf("relection: election %q: %w", name, errs.ErrClosed))
	case <-t.ended:
	}
}

// end ends the term with cause, cancelling its contexts before it returns;
// the first cause stays.
func (t *term) end(cause error) {
	t.mu.Lock()
	if t.cause != nil {
		t.mu.Unlock()
		return
	}
	t.cause = cause
	close(t.ended)
	cancels := t.cancels
	t.cancels = nil
	t.mu.Unlock()
	for _, cancel := range cancels {
		cancel(cause)
	}
}

// add makes ctx end with the term: cancel is called with the term's cause,
// at once if it has ended. ctx leaves the term when it is done.
func (t *term) add(ctx context.Context, cancel context.CancelCauseFunc) {
	t.mu.Lock()
	if t.cause != nil {
		t.mu.Unlock()
		cancel(t.cause)
		return
	}
	key := &ctx
	t.cancels[key] = cancel
	t.mu.Unlock()
	context.AfterFunc(ctx, func() {
		t.mu.Lock()
		delete(t.cancels, key)
		t.mu.Unlock()
	})
}

// lostCause is the cause of a term that ended by loss.
func lostCause(name string) error {
	return fmt.Errorf("%w: election %q: the lead was lost", errs.ErrLeaseLost, name)
}
