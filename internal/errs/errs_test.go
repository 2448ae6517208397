package errs

import (
	"errors"
	"fmt"
	"testing"
)

// Lost matches ErrLeaseLost and ErrNotHeld, wrapped or not, and says so
// once.
func TestLost(t *testing.T) {
	err := fmt.Errorf("unlock: %w", Lost("lock %q: the hold expired", "x"))
	for _, target := range []error{ErrLeaseLost, ErrNotHeld} {
		if !errors.Is(err, target) {
			t.Errorf("%v does not match %v", err, target)
		}
	}
	if errors.Is(err, ErrNotAcquired) {
		t.Errorf("%v matches ErrNotAcquired", err)
	}
	if got, want := err.Error(), `unlock: redcoord: lease lost: lock "x": the hold expired`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// LostAcquire matches ErrNotAcquired besides what Lost matches.
func TestLostAcquire(t *testing.T) {
	err := LostAcquire("lock %q: the hold re-entered was lost", "x")
	for _, target := range []error{ErrLeaseLost, ErrNotHeld, ErrNotAcquired} {
		if !errors.Is(err, target) {
			t.Errorf("%v does not match %v", err, target)
		}
	}
	if got, want := err.Error(), `redcoord: lease lost: lock "x": the hold re-entered was lost`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// Both matches both errors and says "redcoord: " once, however many
// sentinels the cause wraps.
func TestBoth(t *testing.T) {
	err := Both(ErrNotAcquired, fmt.Errorf("%w: x", ErrNotSet))
	for _, target := range []error{ErrNotAcquired, ErrNotSet} {
		if !errors.Is(err, target) {
			t.Errorf("%v does not match %v", err, target)
		}
	}
	if got, want := err.Error(), "redcoord: not acquired: not set: x"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
