package errs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
)

var sentinels = []error{ErrNotAcquired, ErrNotHeld, ErrLeaseLost, ErrClosed, ErrInvalidArgument,
	ErrWrongType, ErrNotReplicated, ErrUpgrade, ErrNotSet, ErrSubscribeRefused, ErrRefused}

// Each error matches exactly the sentinels (and causes) it lists, wrapped
// or not, named by About or not, and composes its message from its parts.
func TestErrorMatchesAndWords(t *testing.T) {
	redis := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	for _, c := range []struct {
		name string
		err  error
		is   []error // what it matches besides itself
		want string
	}{
		{"sentinel alone", &Error{Sentinel: ErrNotHeld}, []error{ErrNotHeld}, "redcoord: not held"},
		{"no sentinel", &Error{Op: "acquire", Cause: redis}, []error{redis},
			"redcoord: acquire: dial tcp 127.0.0.1:1: connect: connection refused"},
		{"not acquired, ctx", Both(ErrNotAcquired, context.Canceled), []error{ErrNotAcquired, context.Canceled},
			"redcoord: not acquired: context canceled"},
		{"not acquired, closed", Both(ErrNotAcquired, ErrClosed), []error{ErrNotAcquired, ErrClosed},
			"redcoord: not acquired: client closed"},
		{"not acquired, upgrade", Both(ErrNotAcquired, New(ErrUpgrade, "RUnlock it first")),
			[]error{ErrNotAcquired, ErrUpgrade}, "redcoord: not acquired: read lock cannot be upgraded: RUnlock it first"},
		{"not acquired, not set", Both(ErrNotAcquired, New(ErrNotSet, "its permits were never set")),
			[]error{ErrNotAcquired, ErrNotSet}, "redcoord: not acquired: not set: its permits were never set"},
		{"not acquired, not replicated", &Error{Sentinel: ErrNotAcquired, Note: "the acquire was undone",
			Cause: New(ErrNotReplicated, "0 of 1 replicas acknowledged within 1s")},
			[]error{ErrNotAcquired, ErrNotReplicated},
			"redcoord: not acquired: not replicated: 0 of 1 replicas acknowledged within 1s; the acquire was undone"},
		{"lost", Lost(`rlock "x"`, "the hold expired"), []error{ErrLeaseLost, ErrNotHeld},
			`redcoord: lease lost: rlock "x": the hold expired`},
		{"lost acquire", LostAcquire(`rlock "x"`, "the hold re-entered has ended"),
			[]error{ErrLeaseLost, ErrNotHeld, ErrNotAcquired}, `redcoord: lease lost: rlock "x": the hold re-entered has ended`},
		{"invalid", Invalid("lease", "must be > 0, got %v", -1), []error{ErrInvalidArgument},
			"redcoord: invalid argument: lease: must be > 0, got -1"},
		{"wrong type with op", &Error{Sentinel: ErrWrongType, Op: "acquire", Detail: "key k holds a string"},
			[]error{ErrWrongType}, "redcoord: key holds another type: acquire: key k holds a string"},
		{"noted", Noted(New(ErrNotReplicated, "WAIT"), "the release stands"), []error{ErrNotReplicated},
			"redcoord: not replicated: WAIT; the release stands"},
		{"kind and name", &Error{Sentinel: ErrClosed, Kind: "relection", Name: "e", Detail: "the lead is no longer kept"},
			[]error{ErrClosed}, `redcoord: client closed: relection "e": the lead is no longer kept`},
		{"names", &Error{Sentinel: ErrNotHeld, Kind: "rlock.MultiMutex", Names: []string{"a", "b"}},
			[]error{ErrNotHeld}, `redcoord: not held: rlock.MultiMutex ["a" "b"]`},
		{"joined", &Error{Sentinel: ErrNotAcquired, Of: `rlock.RedLock "r"`, Detail: "2 of 3 servers failed",
			Cause: Join(&Error{Op: "clients[0]", Cause: ErrClosed}, &Error{Op: "clients[1]", Cause: redis})},
			[]error{ErrNotAcquired, ErrClosed, redis},
			"redcoord: not acquired: rlock.RedLock \"r\": 2 of 3 servers failed: clients[0]: client closed\n" +
				"clients[1]: dial tcp 127.0.0.1:1: connect: connection refused"},
		{"chain", About("rlatch", "l", Chain(context.Canceled, Lost(`rlock "x"`, "gone"))),
			[]error{context.Canceled, ErrLeaseLost, ErrNotHeld},
			`redcoord: rlatch "l": context canceled: lease lost: rlock "x": gone`},
		{"about twice, two primitives", Named(`rlock.MultiMutex ["a"]`, About("rlock", "a", Both(ErrNotAcquired, io.EOF))),
			[]error{ErrNotAcquired, io.EOF}, `redcoord: not acquired: rlock.MultiMutex ["a"]: rlock "a": EOF`},
	} {
		for _, err := range []error{c.err, About("rlock", "x", c.err), fmt.Errorf("outer: %w", c.err)} {
			for _, target := range sentinels {
				if got, want := errors.Is(err, target), contains(c.is, target); got != want {
					t.Errorf("%s: errors.Is(%q, %v) = %v", c.name, err, target, got)
				}
			}
			for _, target := range append(c.is, c.err) {
				if !errors.Is(err, target) {
					t.Errorf("%s: %q does not match %v", c.name, err, target)
				}
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("%s: errors.As finds no *Error in %q", c.name, err)
			}
		}
		if got := c.err.Error(); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

func contains(errs []error, target error) bool {
	for _, e := range errs {
		if e == target {
			return true
		}
	}
	return false
}

// Unwrap returns the Cause, and errors.As reaches through it.
func TestErrorUnwrap(t *testing.T) {
	cause := &Error{Op: "acquire", Cause: io.EOF}
	err := &Error{Sentinel: ErrNotAcquired, Cause: cause}
	if errors.Unwrap(err) != cause {
		t.Errorf("Unwrap = %v, want the cause", errors.Unwrap(err))
	}
	var e *Error
	if !errors.As(errors.Unwrap(err), &e) || e.Op != "acquire" {
		t.Errorf("As finds %+v", e)
	}
	if (&Error{Sentinel: ErrNotHeld}).Unwrap() != nil {
		t.Error("an Error without a cause unwraps to something")
	}
	if Join() != nil || Join(nil, nil) != nil {
		t.Error("Join of nothing is not nil")
	}
}

// About puts the cause's sentinel first, and the primitive before the
// rest, however deep the sentinel sits under Errors with no words of
// their own; an Error with an operation or detail keeps its cause's words
// after them.
func TestErrorHoist(t *testing.T) {
	deep := &Error{Cause: &Error{Cause: Both(ErrNotAcquired, context.DeadlineExceeded)}}
	if got, want := About("rfairlock", "q", deep).Error(),
		`redcoord: not acquired: rfairlock "q": context deadline exceeded`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	op := &Error{Op: "release", Cause: ErrNotHeld}
	if got, want := About("rlock", "x", op).Error(), `redcoord: rlock "x": release: not held`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// Of a part of the primitive names the primitive: About keeps it.
	part := Of(`rrwlock "x": read lock`, ErrNotHeld, "not held by this handle")
	if About("rrwlock", "x", part) != part {
		t.Errorf("About renamed %q", part)
	}
	if About("rrwlock", "xy", part) == part {
		t.Errorf("About took %q for another name's", part)
	}
}

// Words leaves other errors' messages as they are.
func TestWords(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{io.EOF, "EOF"},
		{ErrClosed, "client closed"},
		{Both(ErrNotAcquired, ErrClosed), "not acquired: client closed"},
		{fmt.Errorf("x: %w", io.EOF), "x: EOF"},
	} {
		if got := Words(c.err); got != c.want {
			t.Errorf("Words(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
