package hold

import (
	"context"
	"sync"
)

// slot is a one-slot semaphore whose wait is bounded by a context, as a
// channel of capacity one is, without the channel: a handle keeps two
// (its Gate's and its Tracker's turn), and most handles never wait on
// either, so the channel a waiter needs is made only when one waits. A
// mutex of its owner's guards it. Its zero value is free.
type slot struct {
	// freed is closed, and cleared, when the slot is given back while
	// someone waits for it; nil while nobody waits.
	freed chan struct{}
	full  bool
}

// tryTakeLocked takes the slot if it is free and reports whether it did;
// the caller holds the slot's mutex.
func (s *slot) tryTakeLocked() bool {
	if s.full {
		return false
	}
	s.full = true
	return true
}

// take waits for the slot until ctx is done, and then returns ctx.Err();
// mu is the slot's mutex, which the caller does not hold. Like a channel
// send in a select with ctx.Done(), it may take a free slot although ctx
// is done.
func (s *slot) take(ctx context.Context, mu *sync.Mutex) error {
	for {
		mu.Lock()
		if s.tryTakeLocked() {
			mu.Unlock()
			return nil
		}
		if s.freed == nil {
			s.freed = make(chan struct{})
		}
		freed := s.freed
		mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// giveLocked gives the slot back and wakes whoever waits for it to try
// again; the caller holds the slot's mutex.
func (s *slot) giveLocked() {
	s.full = false
	if s.freed != nil {
		close(s.freed)
		s.freed = nil
	}
}
