package errs

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// Lost matches ErrLeaseLost and ErrNotHeld, wrapped or not, and says so
// once.
func TestLost(t *testing.T) {
	err := fmt.Errorf("unlock: %w", Lost(`lock "x"`, "the hold expired"))
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
	err := LostAcquire(`lock "x"`, "the hold re-entered was lost")
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
	err := Both(ErrNotAcquired, New(ErrNotSet, "x"))
	for _, target := range []error{ErrNotAcquired, ErrNotSet} {
		if !errors.Is(err, target) {
			t.Errorf("%v does not match %v", err, target)
		}
	}
	if got, want := err.Error(), "redcoord: not acquired: not set: x"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// About names the primitive after the sentinel's words, once, and keeps
// what the error matches.
func TestAbout(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{New(ErrNotHeld, "not held by this handle"), `redcoord: not held: rlock "x": not held by this handle`},
		{Both(ErrNotAcquired, context.Canceled), `redcoord: not acquired: rlock "x": context canceled`},
		{Both(ErrNotAcquired, ErrClosed), `redcoord: not acquired: rlock "x": client closed`},
		{ErrClosed, `redcoord: client closed: rlock "x"`},
		{context.Canceled, `redcoord: rlock "x": context canceled`},
		{Lost(`rlock "x"`, "the hold expired"), `redcoord: lease lost: rlock "x": the hold expired`},
		{Invalid("name", "must not be empty"), `redcoord: invalid argument: rlock "x": name: must not be empty`},
		{&Error{Op: "acquire", Cause: ErrNotSet}, `redcoord: rlock "x": acquire: not set`},
	} {
		err := About("rlock", "x", c.err)
		if got := err.Error(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
		if !errors.Is(err, c.err) {
			t.Errorf("%v does not match %v", err, c.err)
		}
		if again := About("rlock", "x", err); again != err {
			t.Errorf("About twice: %q", again)
		}
	}
	if About("rlock", "x", nil) != nil {
		t.Error("About(nil) is not nil")
	}
	err := Named(TagNames("rlock.MultiMutex", []string{"a", "b"}), New(ErrNotAcquired, "busy"))
	if got, want := err.Error(), `redcoord: not acquired: rlock.MultiMutex ["a" "b"]: busy`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
